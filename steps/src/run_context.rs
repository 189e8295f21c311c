//! What every scenario of a run shares: the cluster, Kueue, the controller under test, the
//! invariant monitor, the serial lock and the results. cucumber creates each World without
//! arguments, so the run's context is reachable through [`current`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::monitor::Monitor;
use crate::options::{ControllerMode, SuiteOptions};
use crate::report::recorder::StepRecorder;
use crate::report::{ScenarioRecord, Skipped};
use crate::serial_offers::Offers;
use crate::under_test::ControllerUnderTest;
use crate::under_test::pool::OwnControllerPods;

pub use environment::kueue_upgrade::{KueueHandle, PendingUpgrade};
use environment::places::Places;
pub use environment::{FLAVOR, FLAVOR_TOLERATION_KEY};

/// Scenarios' own clusters up at once (each a control plane, Kueue and a controller; on 2
/// cores the reference suite ended in 209 s with 8, 273 s with 5, 392 to 438 s with 3, all
/// passing; with 10 in 263 s, the load at 11 and its longest scenario 184 s instead of 129 s;
/// with 16, starting them all at once took 108 s and 8 scenarios failed), fewer
/// where this user's inotify instances would not hold them ([`clusters::inotify`]).
pub const OWN_CLUSTERS: usize = 8;

/// Scenarios' own controllers up at once where each is a pod (`in-cluster`): their pods start
/// on the cluster's nodes, which on the local cluster is one real node, and each is kept from
/// one scenario to the next ([`OwnControllerPods`]). When each scenario deployed and deleted a
/// pod of its own, a killed controller's pod took 5 to 12 s to come back with 16 at once,
/// waiting its turn on the node after the windows it restarts inside had begun, and one run of
/// six failed that way with 12; with 8 all passed. Kept pods leave the node only the kills and
/// restarts to do, and with 12 the in-cluster runs passed (85 s against 100 s with 8, where the
/// last four such scenarios waited for the first to end).
pub const OWN_CONTROLLER_PODS: usize = 12;

/// [`OWN_CLUSTERS`], or as many as the inotify instances left allow, saying so.
fn own_cluster_places() -> usize {
    let Some((limit, held)) = clusters::inotify::usage() else {
        return OWN_CLUSTERS;
    };
    let places = clusters::inotify::clusters_that_fit(OWN_CLUSTERS, limit, held);
    if places < OWN_CLUSTERS {
        println!(
            "awconf: {places} clusters of scenarios' own at once, not {OWN_CLUSTERS}: this user \
             holds {held} of its {limit} inotify instances (fs.inotify.max_user_instances), and \
             each cluster takes about {}; raise it with `sysctl fs.inotify.max_user_instances=512`",
            clusters::inotify::PER_CLUSTER
        );
    }
    places
}

pub struct RunContext {
    pub options: SuiteOptions,
    /// For steps and hooks: requests time out (30 s) instead of hanging a scenario.
    pub client: kube::Client,
    /// For what watches (the embedded controller, the monitor): no read timeout.
    pub watch_client: kube::Client,
    /// The cluster's kubeconfig (for steps that make clients of their own).
    pub kubeconfig: PathBuf,
    /// Kueue's log: the host process's, or its pods' followed into a file.
    pub kueue_log: PathBuf,
    pub controller: tokio::sync::Mutex<ControllerUnderTest>,
    pub monitor: Monitor,
    /// What the cluster offers; scenarios that need more are skipped with the reason.
    pub capabilities: clusters::Capabilities,
    /// Scenarios hold it shared; `@serial` ones hold it exclusively.
    pub serial: Arc<tokio::sync::RwLock<()>>,
    pub results: Mutex<Vec<ScenarioRecord>>,
    /// Scenarios the controller under test is not held to, or the cluster cannot run.
    pub excluded: Arc<Mutex<Vec<Skipped>>>,
    /// When each step ran and how it went.
    pub steps: StepRecorder,
    /// The harness log (where the embedded controller logs), when this run writes one.
    pub harness_log: Option<PathBuf>,
    /// Kueue started at an older release for the `@kueue-upgrade` scenario, when it runs.
    pub kueue_upgrade: Option<PendingUpgrade>,
    /// A few letters unique to this run, in its namespace names: a cluster that outlives the
    /// run may still be deleting the namespaces of the previous one.
    pub run_token: String,
    /// Scenarios done of those selected, shown while the run goes (none until the run says
    /// how many: a bar made early would stay on the terminal).
    pub progress: Option<crate::suite_progress::SuiteProgress>,
    /// The API server's release (`/version`), shown in the report beside Kueue's.
    pub kubernetes: Option<String>,
    /// What scenarios that stop the controller or upgrade Kueue get instead of running alone.
    pub isolation: Offers,
    /// The Kueue release the `@kueue-upgrade` scenario's own cluster starts at, when it gets one.
    pub kueue_upgrade_on_own_cluster: Option<clusters::kueue::KueueVersion>,
    /// Places for scenarios' own clusters: each runs a control plane, Kueue and a controller.
    pub own_clusters: Places,
    /// The run's concurrency (`--concurrency`): a scenario runs once it holds one. cucumber
    /// starts every scenario at once and hands them out in the order it reads them, feature
    /// by feature; these go to the waiting scenario expected to take longest, whatever its
    /// feature, so that long scenarios do not start last.
    pub run_slots: Places,
    /// Scenarios' own controllers where each is a pod ([`OWN_CONTROLLER_PODS`] at once), kept
    /// from one scenario to the next.
    pub own_controller_pods: Option<OwnControllerPods>,
    /// Seconds each scenario is expected to take, by `feature: scenario`
    /// ([`crate::plan::expected`]): the order scenarios start in and get places in.
    pub expected: HashMap<String, f64>,
    counter: AtomicUsize,
}

impl RunContext {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        options: SuiteOptions,
        client: kube::Client,
        watch_client: kube::Client,
        kubeconfig: PathBuf,
        kueue_log: PathBuf,
        controller: ControllerUnderTest,
        monitor: Monitor,
        capabilities: clusters::Capabilities,
        harness_log: Option<PathBuf>,
        isolation: Offers,
    ) -> Self {
        let places = if isolation.any_own_cluster() {
            for name in clusters::netns::remove_stale() {
                tracing::info!("deleted network namespace {name}, left by a run that is gone");
            }
            own_cluster_places()
        } else {
            OWN_CLUSTERS
        };
        let own_controller_pods = matches!(options.controller, ControllerMode::InCluster { .. })
            .then(|| OwnControllerPods::new(OWN_CONTROLLER_PODS));
        let expected = crate::plan::expected(&options.report_dir, &options.controller);
        let run_slots = Places::new(options.concurrency.max(1));
        RunContext {
            options,
            client,
            watch_client,
            kubeconfig,
            kueue_log,
            controller: tokio::sync::Mutex::new(controller),
            monitor,
            capabilities,
            serial: Arc::new(tokio::sync::RwLock::new(())),
            results: Mutex::new(Vec::new()),
            excluded: Arc::default(),
            steps: StepRecorder::default(),
            harness_log,
            kueue_upgrade: None,
            kueue_upgrade_on_own_cluster: None,
            run_token: run_token(),
            progress: None,
            kubernetes: None,
            isolation,
            own_clusters: Places::new(places),
            run_slots,
            own_controller_pods,
            expected,
            counter: AtomicUsize::new(0),
        }
    }

    /// Shows progress over `total` selected scenarios.
    pub fn with_progress(mut self, total: usize) -> Self {
        self.progress = Some(crate::suite_progress::SuiteProgress::new(total));
        self
    }

    /// The cluster's API server runs `release`.
    pub fn with_kubernetes(mut self, release: Option<String>) -> Self {
        self.kubernetes = release;
        self
    }

    /// Kueue runs at an older release until the `@kueue-upgrade` scenario upgrades it.
    pub fn with_kueue_upgrade(mut self, upgrade: Option<PendingUpgrade>) -> Self {
        self.kueue_upgrade = upgrade;
        self
    }

    /// The `@kueue-upgrade` scenario gets a cluster of its own with Kueue at `from`.
    pub fn with_kueue_upgrade_on_own_cluster(
        mut self,
        from: Option<clusters::kueue::KueueVersion>,
    ) -> Self {
        self.kueue_upgrade_on_own_cluster = from;
        self
    }

    /// The Kueue upgrade that no scenario has made yet, if any.
    pub fn kueue_upgrade_pending(&self) -> Option<&PendingUpgrade> {
        self.kueue_upgrade.as_ref().filter(|u| !u.done())
    }

    /// Seconds the scenario is expected to take; one not known counts as the longest.
    pub fn expected_seconds(&self, feature: &str, scenario: &str) -> f64 {
        self.expected
            .get(&format!("{feature}: {scenario}"))
            .copied()
            .unwrap_or(f64::INFINITY)
    }

    /// A number unique in this run, for namespace names.
    pub fn next_id(&self) -> usize {
        self.counter.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn record(&self, record: ScenarioRecord) {
        if let Some(progress) = &self.progress {
            progress.ended(&record);
        }
        if let Ok(mut results) = self.results.lock() {
            results.push(record);
        }
    }

    pub fn records(&self) -> Vec<ScenarioRecord> {
        self.results.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Log files whose new lines belong in a failed scenario's artifacts, by label.
    pub async fn log_files(&self) -> Vec<(&'static str, PathBuf)> {
        let controller = self.controller.lock().await;
        self.log_files_with(controller.log_path(), &self.kueue_log)
    }

    /// [`Self::log_files`] with another controller's log and Kueue's (a scenario's own cluster).
    pub fn log_files_with(
        &self,
        controller_log: Option<&std::path::Path>,
        kueue_log: &std::path::Path,
    ) -> Vec<(&'static str, PathBuf)> {
        let mut files = Vec::new();
        if let Some(path) = &self.harness_log {
            files.push(("harness", path.clone()));
        }
        if let Some(path) = controller_log {
            files.push(("controller", path.to_path_buf()));
        }
        files.push(("kueue", kueue_log.to_path_buf()));
        files
    }
}

/// Three base-36 letters from the clock: runs a few seconds apart differ.
fn run_token() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n = seconds % 36u64.pow(3);
    let mut token = String::new();
    for _ in 0..3 {
        token.insert(0, digits[(n % 36) as usize] as char);
        n /= 36;
    }
    // A letter first, so that `aw-<token><id>` reads as one word.
    format!("r{token}")
}

fn slot() -> &'static RwLock<Option<Arc<RunContext>>> {
    static CURRENT: RwLock<Option<Arc<RunContext>>> = RwLock::new(None);
    &CURRENT
}

/// The context of the run in progress.
pub fn current() -> anyhow::Result<Arc<RunContext>> {
    slot()
        .read()
        .ok()
        .and_then(|h| h.clone())
        .ok_or_else(|| anyhow::anyhow!("no conformance run in progress (call run_suite)"))
}

pub fn install(context: Arc<RunContext>) {
    if let Ok(mut slot) = slot().write() {
        *slot = Some(context);
    }
}

pub fn uninstall() -> Option<Arc<RunContext>> {
    slot().write().ok().and_then(|mut s| s.take())
}
