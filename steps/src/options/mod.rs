//! What a suite run is asked to do, and what it reports back.

mod cluster;
mod external;
mod feature_set;
pub mod mode;
mod summary;
mod upgrade;

use std::path::{Path, PathBuf};

pub use cluster::ClusterChoice;
pub use external::ExternalCommand;
pub use feature_set::FeatureSet;
pub use mode::ControllerMode;
pub use summary::Summary;
pub use upgrade::{KueueUpgrade, TAG as KUEUE_UPGRADE_TAG, parse_upgrade_from};

/// Options of [`crate::run_suite`].
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    pub cluster: ClusterChoice,
    pub controller: ControllerMode,
    /// The Kueue under test: a release tag such as `v0.19.2`, a checkout or a binary.
    pub kueue: clusters::kueue::KueueSource,
    /// The release the `@kueue-upgrade` scenario upgrades Kueue from; `None`: the newest
    /// pinned release older than `kueue` (see [`SuiteOptions::kueue_upgrade`]).
    pub kueue_upgrade_from: Option<clusters::kueue::KueueVersion>,
    /// A cucumber tag expression (`@kueue and not @serial`); `None` runs everything.
    pub tags: Option<String>,
    /// Substrings of `feature: scenario`; a scenario runs when it contains any of them (all
    /// run when empty).
    pub filters: Vec<String>,
    /// The feature files to run: the built-in ones, and a user's beside them or instead.
    pub features: FeatureSet,
    /// How many times a failed scenario is run again; one that passes on a retry is flaky.
    pub retries: usize,
    /// Where the JUnit XML goes; `None` means `<report_dir>/junit.xml`.
    pub junit: Option<PathBuf>,
    /// Reports (JUnit, cucumber JSON, HTML) and the artifacts of failed scenarios.
    pub report_dir: PathBuf,
    /// Keep the namespace and objects of a failed scenario instead of cleaning them up.
    pub keep_on_failure: bool,
    /// Scenarios run at once (`@serial` ones always run alone).
    pub concurrency: usize,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            cluster: ClusterChoice::Local,
            controller: ControllerMode::Embedded,
            // An unparsable AWCONF_KUEUE_VERSION is reported by `from_env`.
            kueue: clusters::kueue::test_source()
                .unwrap_or_else(|_| clusters::kueue::KueueSource::pinned()),
            kueue_upgrade_from: None,
            tags: None,
            filters: Vec::new(),
            features: FeatureSet::BuiltIn,
            retries: 0,
            junit: None,
            // Relative to the working directory: the workspace under `cargo test`.
            report_dir: Path::new("target").join("awconf-report"),
            keep_on_failure: false,
            concurrency: 32,
        }
    }
}

impl SuiteOptions {
    /// The defaults, overridden by `AWCONF_CONTROLLER` (embedded|process|external|reference),
    /// `AWCONF_APPWRAPPER_VERSION` (the reference operator's version),
    /// `AWCONF_CONTROLLER_COMMAND`, `AWCONF_CONTROLLER_BIN`, `AWCONF_KUEUE_VERSION`,
    /// `AWCONF_KUEUE_SOURCE` (a Kueue checkout), `AWCONF_KUEUE_UPGRADE_FROM` (the release the
    /// upgrade scenario starts from),
    /// `AWCONF_TAGS`, `AWCONF_FEATURES` (a directory added to the built-in features),
    /// `AWCONF_ONLY_FEATURES` (a directory run instead of them), `AWCONF_RETRIES`,
    /// `AWCONF_JUNIT`, `AWCONF_REPORT_DIR`, `AWCONF_KEEP_ON_FAILURE` (1/true),
    /// `AWCONF_CONCURRENCY`, and for the cluster
    /// `AWCONF_CLUSTER`, `AWCONF_KUBECONFIG`, `AWCONF_CONTEXT`, `AWCONF_INSTALL`,
    /// `AWCONF_LOAD_IMAGES` and `AWCONF_CONTROLLER_IMAGE`.
    pub fn from_env() -> Result<Self, String> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Self::from_env`] over any source of variables; empty values count as unset.
    pub fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let var = |name: &str| lookup(name).filter(|v| !v.is_empty());
        let mut options = SuiteOptions {
            controller: ControllerMode::parse(
                &var("AWCONF_CONTROLLER").unwrap_or_default(),
                var("AWCONF_CONTROLLER_COMMAND").map(ExternalCommand::Shell),
                var("AWCONF_CONTROLLER_BIN").map(PathBuf::from),
            )?
            .with_reference_version(var("AWCONF_APPWRAPPER_VERSION"))
            .with_image(var("AWCONF_CONTROLLER_IMAGE")),
            cluster: ClusterChoice::parse(
                &var("AWCONF_CLUSTER").unwrap_or_else(|| "local".into()),
                var("AWCONF_KUBECONFIG").map(PathBuf::from),
                var("AWCONF_CONTEXT"),
                var("AWCONF_INSTALL").as_deref(),
                var("AWCONF_LOAD_IMAGES").map(|v| v.parse()).transpose()?,
            )?,
            ..SuiteOptions::default()
        };
        if let Some(v) = var("AWCONF_KUEUE_VERSION") {
            options.kueue = clusters::kueue::KueueSource::release(&v)
                .map_err(|e| format!("AWCONF_KUEUE_VERSION: {e}"))?;
        }
        if let Some(dir) = var("AWCONF_KUEUE_SOURCE") {
            options.kueue = clusters::kueue::KueueSource::Checkout(dir.into());
        }
        if let Some(v) = var("AWCONF_KUEUE_UPGRADE_FROM") {
            options.kueue_upgrade_from = Some(parse_upgrade_from("AWCONF_KUEUE_UPGRADE_FROM", &v)?);
        }
        options.tags = var("AWCONF_TAGS");
        options.features = FeatureSet::from_dirs(
            var("AWCONF_FEATURES").map(PathBuf::from),
            var("AWCONF_ONLY_FEATURES").map(PathBuf::from),
        )?;
        if let Some(v) = var("AWCONF_RETRIES") {
            options.retries = v
                .parse()
                .map_err(|_| format!("AWCONF_RETRIES={v:?} is not a number"))?;
        }
        options.junit = var("AWCONF_JUNIT").map(PathBuf::from);
        if let Some(v) = var("AWCONF_REPORT_DIR") {
            options.report_dir = v.into();
        }
        options.keep_on_failure = var("AWCONF_KEEP_ON_FAILURE")
            .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "yes"));
        if let Some(v) = var("AWCONF_CONCURRENCY") {
            options.concurrency = v
                .parse()
                .map_err(|_| format!("AWCONF_CONCURRENCY={v:?} is not a number"))?;
        }
        Ok(options)
    }

    pub fn junit_path(&self) -> PathBuf {
        self.junit
            .clone()
            .unwrap_or_else(|| self.report_dir.join("junit.xml"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<SuiteOptions, String> {
        SuiteOptions::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    type Vars<'a> = &'a [(&'a str, &'a str)];

    #[test]
    fn feature_directories_and_retries_come_from_the_environment() {
        let table: &[(Vars, FeatureSet, usize)] = &[
            (&[], FeatureSet::BuiltIn, 0),
            (
                &[("AWCONF_FEATURES", "mine"), ("AWCONF_RETRIES", "2")],
                FeatureSet::BuiltInAnd("mine".into()),
                2,
            ),
            (
                &[("AWCONF_ONLY_FEATURES", "mine"), ("AWCONF_FEATURES", "")],
                FeatureSet::Only("mine".into()),
                0,
            ),
        ];
        for (vars, features, retries) in table {
            let options = from(vars).unwrap();
            assert_eq!(&options.features, features, "{vars:?}");
            assert_eq!(options.retries, *retries, "{vars:?}");
        }
        let errors = [
            (&[("AWCONF_RETRIES", "twice")][..], "AWCONF_RETRIES"),
            (
                &[("AWCONF_FEATURES", "a"), ("AWCONF_ONLY_FEATURES", "b")][..],
                "give one",
            ),
        ];
        for (vars, want) in errors {
            let e = from(vars).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn the_upgrade_start_comes_from_the_environment() {
        assert_eq!(from(&[]).unwrap().kueue_upgrade_from, None);
        let options = from(&[("AWCONF_KUEUE_UPGRADE_FROM", "v0.17.8")]).unwrap();
        assert_eq!(
            options.kueue_upgrade_from,
            Some(clusters::kueue::KueueVersion(0, 17, 8))
        );
        let e = from(&[("AWCONF_KUEUE_UPGRADE_FROM", "latest")]).unwrap_err();
        assert!(e.starts_with("AWCONF_KUEUE_UPGRADE_FROM: "), "{e}");
    }
}
