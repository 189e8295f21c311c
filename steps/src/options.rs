//! What a suite run is asked to do, and what it reports back.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which cluster the suite runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ClusterChoice {
    /// The embedded control plane of crate `clusters`, with the real Kueue manager.
    #[default]
    Local,
}

/// The controller under test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ControllerMode {
    /// Our controller, in this process (`appwrapper_controller::run::run`).
    #[default]
    Embedded,
    /// Our binary as a child process, so that it can be SIGKILLed. `None` looks for
    /// `appwrapper-controller` beside the test executable (`cargo build -p appwrapper-controller`).
    Process { binary: Option<PathBuf> },
    /// Any command, run with `sh -c`, for example the reference operator. `{kubeconfig}` and
    /// `{config}` in it are replaced by the paths of the cluster's kubeconfig and of the
    /// suite's controller configuration; `KUBECONFIG` is set as well.
    External { command: String },
    /// The reference Go operator at this version, built from its module into the cache and
    /// run as a child process configured through its own ConfigMap.
    Reference { version: String },
}

impl ControllerMode {
    /// `embedded`, `process`, `external` or `reference`; `command` is required by `external`.
    pub fn parse(
        mode: &str,
        command: Option<String>,
        binary: Option<PathBuf>,
    ) -> Result<Self, String> {
        match mode {
            "embedded" | "" => Ok(ControllerMode::Embedded),
            "process" => Ok(ControllerMode::Process { binary }),
            "reference" => Ok(ControllerMode::Reference {
                version: clusters::toolchain::APPWRAPPER_DEFAULT.to_string(),
            }),
            "external" => command
                .filter(|c| !c.trim().is_empty())
                .map(|command| ControllerMode::External { command })
                .ok_or_else(|| {
                    "controller mode `external` needs a command (AWCONF_CONTROLLER_COMMAND)"
                        .to_string()
                }),
            other => Err(format!(
                "unknown controller mode {other:?}: expected embedded, process, external or reference"
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ControllerMode::Embedded => "embedded",
            ControllerMode::Process { .. } => "process",
            ControllerMode::External { .. } => "external",
            ControllerMode::Reference { .. } => "reference",
        }
    }

    /// Sets the reference operator's version (a no-op for the other modes).
    pub fn with_reference_version(self, v: Option<String>) -> Self {
        match (self, v) {
            (ControllerMode::Reference { .. }, Some(version)) => {
                ControllerMode::Reference { version }
            }
            (mode, _) => mode,
        }
    }

    /// A child process that the suite starts and kills (our binary or the reference).
    pub fn is_child(&self) -> bool {
        matches!(
            self,
            ControllerMode::Process { .. } | ControllerMode::Reference { .. }
        )
    }
}

/// Options of [`crate::run_suite`].
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    pub cluster: ClusterChoice,
    pub controller: ControllerMode,
    /// A Kueue release tag such as `v0.19.2`.
    pub kueue_version: String,
    /// A cucumber tag expression (`@kueue and not @serial`); `None` runs everything.
    pub tags: Option<String>,
    /// Substrings of `feature: scenario`; a scenario runs when it contains any of them (all
    /// run when empty).
    pub filters: Vec<String>,
    /// A directory of `*.feature` files; `None` runs the built-in ones ([`crate::features`]).
    pub features: Option<PathBuf>,
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
            kueue_version: clusters::kueue::test_version(),
            tags: None,
            filters: Vec::new(),
            features: None,
            junit: None,
            // Relative to the working directory: the workspace under `cargo test`.
            report_dir: Path::new("target").join("awconf-report"),
            keep_on_failure: false,
            concurrency: 16,
        }
    }
}

impl SuiteOptions {
    /// Whether the scenario titled `feature: scenario` passes the name filters.
    pub fn selects(&self, feature: &str, scenario: &str) -> bool {
        let title = format!("{feature}: {scenario}");
        self.filters.is_empty() || self.filters.iter().any(|f| title.contains(f.as_str()))
    }

    /// The defaults, overridden by `AWCONF_CONTROLLER` (embedded|process|external|reference),
    /// `AWCONF_APPWRAPPER_VERSION` (the reference operator's version),
    /// `AWCONF_CONTROLLER_COMMAND`, `AWCONF_CONTROLLER_BIN`, `AWCONF_KUEUE_VERSION`,
    /// `AWCONF_TAGS`, `AWCONF_FEATURES`, `AWCONF_JUNIT`, `AWCONF_REPORT_DIR`,
    /// `AWCONF_KEEP_ON_FAILURE` (1/true) and `AWCONF_CONCURRENCY`.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mut options = SuiteOptions {
            controller: ControllerMode::parse(
                &var("AWCONF_CONTROLLER").unwrap_or_default(),
                var("AWCONF_CONTROLLER_COMMAND"),
                var("AWCONF_CONTROLLER_BIN").map(PathBuf::from),
            )?
            .with_reference_version(var("AWCONF_APPWRAPPER_VERSION")),
            ..SuiteOptions::default()
        };
        if let Some(v) = var("AWCONF_KUEUE_VERSION") {
            options.kueue_version = v;
        }
        options.tags = var("AWCONF_TAGS");
        if let Some(v) = var("AWCONF_FEATURES") {
            options.features = Some(v.into());
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

/// The result of a run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    /// Feature files that did not parse (each also counts as failed).
    pub parse_errors: usize,
    pub duration: Duration,
    /// Phase-diagram edges the monitor saw taken, out of all edges.
    pub transitions_covered: usize,
    pub transitions_total: usize,
    /// (feature: scenario, seconds), slowest first.
    pub slowest: Vec<(String, f64)>,
    pub failed_scenarios: Vec<String>,
    /// Scenarios not run for this controller: (feature: scenario, reason).
    pub excluded: Vec<(String, String)>,
    pub report_dir: PathBuf,
}

impl Summary {
    pub fn success(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }

    /// The closing line CI reads: `N passed, N failed`, and `, N skipped` when scenarios were
    /// excluded for the controller under test.
    pub fn closing_line(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed, self.failed);
        if !self.excluded.is_empty() {
            line.push_str(&format!(", {} skipped", self.excluded.len()));
        }
        line
    }

    /// What a run prints at its end; the closing line comes last.
    pub fn report_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "phase-diagram transitions taken: {} of {}",
            self.transitions_covered, self.transitions_total
        )];
        lines.extend(
            self.slowest
                .iter()
                .take(3)
                .map(|(name, secs)| format!("slow: {secs:.1}s {name}")),
        );
        lines.extend(
            self.excluded
                .iter()
                .map(|(name, reason)| format!("skipped: {name} ({reason})")),
        );
        lines.extend(
            self.failed_scenarios
                .iter()
                .map(|name| format!("failed: {name}")),
        );
        lines.push(format!(
            "reports in {} ({:.0}s)",
            self.report_dir.display(),
            self.duration.as_secs_f64()
        ));
        if self.passed + self.failed == 0 {
            lines.push("no scenario matched the filter".to_string());
        }
        lines.push(self.closing_line());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_modes_parse() {
        assert_eq!(
            ControllerMode::parse("", None, None),
            Ok(ControllerMode::Embedded)
        );
        assert_eq!(
            ControllerMode::parse("process", None, None),
            Ok(ControllerMode::Process { binary: None })
        );
        assert!(ControllerMode::parse("external", None, None).is_err());
        assert_eq!(
            ControllerMode::parse("external", Some("run {kubeconfig}".into()), None),
            Ok(ControllerMode::External {
                command: "run {kubeconfig}".into()
            })
        );
        assert!(ControllerMode::parse("kind", None, None).is_err());
        let reference = ControllerMode::parse("reference", None, None).unwrap();
        assert_eq!(
            reference,
            ControllerMode::Reference {
                version: "v1.2.2".into()
            }
        );
        assert_eq!(
            reference.with_reference_version(Some("v1.2.1".into())),
            ControllerMode::Reference {
                version: "v1.2.1".into()
            }
        );
        assert_eq!(
            ControllerMode::Embedded.with_reference_version(Some("v1.2.1".into())),
            ControllerMode::Embedded
        );
    }

    #[test]
    fn name_filters_match_substrings_of_feature_and_scenario() {
        let mut options = SuiteOptions::default();
        assert!(options.selects("Phases", "Running → Succeeded: every pod succeeded"));
        options.filters = vec!["Running → Succeeded".into(), "Restart".into()];
        assert!(options.selects("Phases", "Running → Succeeded: every pod succeeded"));
        assert!(options.selects("Restart safety", "Killed while Resetting"));
        assert!(!options.selects("Phases", "Running → Failed"));
    }

    #[test]
    fn the_closing_line_counts_scenarios() {
        let summary = Summary {
            passed: 3,
            failed: 1,
            ..Summary::default()
        };
        assert_eq!(summary.closing_line(), "3 passed, 1 failed");
        assert!(!summary.success());
        let skipped = Summary {
            passed: 3,
            excluded: vec![("f: s".into(), "@extension: ...".into())],
            ..Summary::default()
        };
        assert_eq!(skipped.closing_line(), "3 passed, 0 failed, 1 skipped");
        assert!(
            skipped
                .report_lines()
                .iter()
                .any(|l| l.starts_with("skipped: f: s ("))
        );
    }
}
