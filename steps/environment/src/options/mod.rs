//! What a suite run is asked to do, and what it reports back.

mod cluster;
mod controller_upgrade;
mod external;
pub mod mode;
mod upgrade;

use std::path::{Path, PathBuf};

pub use cluster::ClusterChoice;
pub use controller_upgrade::{
    ControllerUpgrade, TAG as CONTROLLER_UPGRADE_TAG,
    parse_upgrade_from as parse_controller_upgrade_from,
};
pub use external::ExternalCommand;
pub use features::FeatureSet;
pub use mode::ControllerMode;
pub use upgrade::{KueueUpgrade, TAG as KUEUE_UPGRADE_TAG, parse_upgrade_from};

/// Options of a run of the suite (`conformance_steps::suite::run_suite`).
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    pub cluster: ClusterChoice,
    pub controller: ControllerMode,
    /// The Kueue under test: a release tag such as `v0.19.2`, a checkout or a binary.
    pub kueue: clusters::kueue::KueueSource,
    /// The release the `@kueue-upgrade` scenario upgrades Kueue from; `None`: the newest
    /// pinned release older than `kueue` (see [`SuiteOptions::kueue_upgrade`]).
    pub kueue_upgrade_from: Option<clusters::kueue::KueueVersion>,
    /// The controller the `@controller-upgrade` scenario starts from before the controller
    /// under test takes over (the reference operator, or a binary of ours); `None`: the
    /// scenario is skipped (see [`SuiteOptions::controller_upgrade`]).
    pub controller_upgrade_from: Option<ControllerMode>,
    /// The Kubernetes release of the local cluster's control plane (`v1.36.3` unless chosen).
    pub kubernetes: String,
    /// A cucumber tag expression (`@kueue and not @serial`); `None` runs everything.
    pub tags: Option<String>,
    /// Substrings of `feature: scenario`; a scenario runs when it contains any of them (all
    /// run when empty).
    pub filters: Vec<String>,
    /// The feature files to run: the built-in ones, and a user's beside them or instead.
    pub features: FeatureSet,
    /// How many times a failed scenario is run again; one that passes on a retry is flaky.
    pub retries: usize,
    /// How many times the scenarios that failed while the machine was starved of CPU run
    /// again once the others are done (see `reruns` in the steps); one that then passes is
    /// flaky.
    pub starved_reruns: usize,
    /// Where the JUnit XML goes; `None` means `<report_dir>/junit.xml`.
    pub junit: Option<PathBuf>,
    /// Reports (JUnit, cucumber JSON, HTML) and the artifacts of failed scenarios.
    pub report_dir: PathBuf,
    /// Keep the namespace and objects of a failed scenario instead of cleaning them up.
    pub keep_on_failure: bool,
    /// Scenarios run at once (`@serial` ones always run alone).
    pub concurrency: usize,
    /// The invariant monitor reads every AppWrapper write from the API server's audit log
    /// where there is one (the local cluster's, or [`SuiteOptions::audit_log`]); otherwise,
    /// or when `false`, it watches.
    pub monitor_from_log: bool,
    /// The audit log of an existing cluster's API server, with every AppWrapper write's
    /// response object (see `clusters::providers::local::audit`), readable here.
    pub audit_log: Option<PathBuf>,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            cluster: ClusterChoice::Local,
            controller: ControllerMode::Embedded,
            // An unparsable AWCONF_KUEUE_VERSION is reported by the command line's parser.
            kueue: clusters::kueue::default_source()
                .unwrap_or_else(|_| clusters::kueue::KueueSource::pinned()),
            kueue_upgrade_from: None,
            controller_upgrade_from: None,
            kubernetes: clusters::toolchain::KUBERNETES.to_string(),
            tags: None,
            filters: Vec::new(),
            features: FeatureSet::BuiltIn,
            retries: 0,
            starved_reruns: 1,
            junit: None,
            // Relative to the working directory: the workspace under `cargo test`.
            report_dir: Path::new("target").join("awconf-report"),
            keep_on_failure: false,
            concurrency: 32,
            monitor_from_log: true,
            audit_log: None,
        }
    }
}

impl SuiteOptions {
    pub fn junit_path(&self) -> PathBuf {
        self.junit
            .clone()
            .unwrap_or_else(|| self.report_dir.join("junit.xml"))
    }

    /// The monitor's source on a cluster whose audit log, if it has one, is `log`, and whose
    /// etcd, where awconf started it, answers at `etcd`.
    pub fn monitor_source(&self, log: Option<PathBuf>, etcd: Option<String>) -> monitor::Source {
        match log {
            Some(log) if self.monitor_from_log => monitor::Source::AuditLog { log, etcd },
            _ => monitor::Source::Watch,
        }
    }
}
