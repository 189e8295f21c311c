//! The World of one scenario: its namespace, ClusterQueue and LocalQueue, the AppWrappers it
//! defines and submits, and what to undo at the end.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use clusters::kueue::objects::{self as kueue_objects, ClusterQueueSpec, Quota};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::environment::own_cluster::OwnCluster;
use crate::monitor::Monitor;
use crate::parameters::Subject;
use crate::report::logs::LogMarks;
use crate::run_context::{FLAVOR, RunContext};
use crate::serial_offers::Isolation;
use crate::under_test::ControllerUnderTest;

/// Name of the LocalQueue in every scenario namespace.
pub const LOCAL_QUEUE: &str = "queue";

/// Something a scenario changed outside its namespace, undone when it ends. `PodFinalizers`:
/// the pods of the namespace that carry [`crate::fixtures::HOLD_FINALIZER`].
#[derive(Clone, Debug)]
pub enum Undo {
    NodeLabel { node: String, key: String },
    NodeTaint { node: String, key: String },
    NodeNotReady { node: String },
    PodFinalizers { namespace: String },
}

/// The scenario's hold on the serial lock (shared, or exclusive for `@serial` scenarios) and on
/// a place for its own controller's pod. Released when dropped.
pub struct SerialGuard {
    _shared: Option<tokio::sync::OwnedRwLockReadGuard<()>>,
    _exclusive: Option<tokio::sync::OwnedRwLockWriteGuard<()>>,
    _pod_place: Option<environment::places::Place>,
    _slot: environment::places::Place,
}

#[derive(cucumber::World)]
#[world(init = Self::new)]
pub struct AwWorld {
    pub h: Arc<RunContext>,
    pub client: kube::Client,
    pub feature: String,
    pub scenario: String,
    pub serial: bool,
    /// Empty until the before hook has set the scenario up.
    pub ns: String,
    pub cluster_queue: String,
    pub queue_spec: ClusterQueueSpec,
    /// ResourceFlavors of this scenario's own (cluster-scoped; deleted after its
    /// ClusterQueue). When there are any, the ClusterQueue offers its quota on each of them,
    /// in this order, instead of on the suite's flavor.
    pub flavors: Vec<String>,
    /// AppWrappers defined but not yet submitted, by name.
    pub drafts: BTreeMap<String, Value>,
    /// Submitted AppWrappers, in order.
    pub submitted: Vec<String>,
    /// What `it` refers to: the last AppWrapper defined or named.
    pub current: Option<String>,
    pub undo: Vec<Undo>,
    /// The node a step last picked (`the node of its pod`).
    pub last_node: Option<String>,
    /// Cluster-scoped objects made for this scenario alone (its fake node, its kinds' CRDs and
    /// roles), deleted with its namespace.
    pub own_cluster_objects: Vec<(kube::api::ApiResource, String)>,
    /// What the steps did, with the time since the scenario started.
    pub journal: Vec<String>,
    pub started: Instant,
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// How long it waited for the serial lock or a place for its own cluster before it began.
    pub waited: std::time::Duration,
    pub marks: LogMarks,
    pub guard: Option<SerialGuard>,
    /// The outcome of the last `I try to ...` step.
    pub attempt: Option<Attempt>,
    /// The scenario upgrades Kueue in place (`@kueue-upgrade`).
    pub upgrades_kueue: bool,
    /// The pods of each submitted AppWrapper (name and uid) just before Kueue was upgraded.
    pub pods_before_upgrade: BTreeMap<String, Vec<(String, String)>>,
    /// The controller of this scenario's AppWrappers alone (`@own-controller`, where the mode
    /// allows): the one its steps stop, kill and restart.
    pub own_controller: Option<ControllerUnderTest>,
    /// The scenario's own cluster, where its own controller runs (`@own-controller` with the
    /// reference operator); `client` is its client then.
    pub own_cluster: Option<OwnCluster>,
    /// The controller the `@controller-upgrade` scenario started from, while it runs in place
    /// of the controller under test.
    pub upgrade_from: Option<ControllerUnderTest>,
    /// The shared controller's settings before a step changed them, put back after the
    /// scenario.
    pub settings_to_restore: Option<appwrapper_controller::config::Config>,
    /// The moments the timing windows' steps measured from, by AppWrapper and kind: a later
    /// window may need one its condition no longer shows.
    pub moments: std::sync::Mutex<BTreeMap<(String, String), chrono::DateTime<chrono::Utc>>>,
    /// Why a step could not judge what it checks (a window's step that began after the window
    /// opened and found the change already made), when one could not: its failure then says
    /// nothing of the controller.
    pub undecided: std::sync::Mutex<Option<String>>,
}

/// What the API server answered to a creation or update the scenario tried.
#[derive(Clone, Debug)]
pub enum Attempt {
    Accepted,
    Refused(Box<kube::core::Status>),
}

impl std::fmt::Debug for AwWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwWorld")
            .field("namespace", &self.ns)
            .field("current", &self.current)
            .field("submitted", &self.submitted)
            .finish()
    }
}

impl AwWorld {
    pub async fn new() -> anyhow::Result<Self> {
        let h = crate::run_context::current()?;
        Ok(AwWorld {
            client: h.client.clone(),
            h,
            feature: String::new(),
            scenario: String::new(),
            serial: false,
            ns: String::new(),
            cluster_queue: String::new(),
            queue_spec: ClusterQueueSpec::default(),
            flavors: Vec::new(),
            own_cluster_objects: Vec::new(),
            drafts: BTreeMap::new(),
            submitted: Vec::new(),
            current: None,
            undo: Vec::new(),
            last_node: None,
            journal: Vec::new(),
            started: Instant::now(),
            started_at: chrono::Utc::now(),
            waited: std::time::Duration::ZERO,
            marks: LogMarks::default(),
            guard: None,
            attempt: None,
            upgrades_kueue: false,
            pods_before_upgrade: BTreeMap::new(),
            own_controller: None,
            own_cluster: None,
            upgrade_from: None,
            settings_to_restore: None,
            moments: std::sync::Mutex::default(),
            undecided: std::sync::Mutex::default(),
        })
    }

    /// Before the first step: take the serial lock, then create the namespace, the
    /// ClusterQueue and the LocalQueue, and start the scenario's own controller if it has one.
    /// While Kueue still runs the release the upgrade scenario starts from, no other scenario
    /// may begin.
    pub async fn setup(
        &mut self,
        feature: &str,
        scenario: &str,
        serial: bool,
        upgrades_kueue: bool,
        isolation: Isolation,
    ) -> anyhow::Result<()> {
        self.feature = feature.to_string();
        self.scenario = scenario.to_string();
        self.serial = serial;
        self.upgrades_kueue = upgrades_kueue;
        let waiting = Instant::now();
        let lock = Arc::clone(&self.h.serial);
        let (shared, exclusive) = if serial {
            (None, Some(lock.write_owned().await))
        } else {
            (Some(lock.read_owned().await), None)
        };
        if let Some(pending) = self.h.kueue_upgrade_pending()
            && !upgrades_kueue
        {
            anyhow::bail!(
                "Kueue still runs {}, the release the @kueue-upgrade scenario upgrades from; that \
                 scenario must run before any other, and has not (plan::upgrade_first orders it)",
                pending.from
            );
        }
        // One of the run's slots (`--concurrency`), then a place for its own cluster or
        // controller pod, each to the waiting scenario expected to take longest: the waits are
        // not the scenario's time. A scenario that waits for a place holds its slot, so that
        // the scenarios running beside clusters of their own are no more than the slots.
        let seconds = self.h.expected_seconds(feature, scenario);
        let slot = self.h.run_slots.take(seconds).await;
        let (place, pod_place) = match (isolation, &self.h.own_controller_pods) {
            (Isolation::OwnCluster, _) => (Some(self.h.own_clusters.take(seconds).await), None),
            (Isolation::OwnController, Some(pods)) => {
                let dir = self.h.options.report_dir.join("controllers");
                let (place, own) = pods.take(seconds, &self.h.controller, &dir).await?;
                self.own_controller = Some(own);
                (None, Some(place))
            }
            _ => (None, None),
        };
        self.guard = Some(SerialGuard {
            _shared: shared,
            _exclusive: exclusive,
            _pod_place: pod_place,
            _slot: slot,
        });
        if let Some(progress) = &self.h.progress {
            progress.started(&format!("{feature}: {scenario}"));
        }
        self.started = Instant::now();
        self.started_at = chrono::Utc::now();
        self.waited = waiting.elapsed();
        self.ns = namespace_name(
            &format!("{}{}", self.h.run_token, self.h.next_id()),
            scenario,
        );
        if let Some(place) = place {
            self.start_own_cluster(place).await?;
        }
        self.marks = LogMarks::take(&self.log_files().await);
        self.cluster_queue = self.ns.clone();
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": { "name": self.ns, "labels": { "awconf.dev/suite": "conformance" } }
        }))?;
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {}", self.ns))?;
        self.queue_spec = ClusterQueueSpec {
            flavor: FLAVOR.into(),
            quota: Quota {
                cpu: "8".into(),
                memory: "64Gi".into(),
                gpus: 4,
            },
            cohort: None,
            preemption: None,
        };
        self.apply_cluster_queue().await?;
        kueue_objects::apply(
            &self.client,
            &kueue_objects::local_queue(&self.ns, LOCAL_QUEUE, &self.cluster_queue),
        )
        .await
        .context("creating the LocalQueue")?;
        self.note(format!(
            "namespace {} with ClusterQueue {}",
            self.ns, self.cluster_queue
        ));
        if isolation == Isolation::OwnController {
            self.start_own_controller().await?;
        }
        Ok(())
    }

    /// A cluster of the scenario's own with the controller under test's mode and settings;
    /// its client becomes the scenario's.
    async fn start_own_cluster(&mut self, place: environment::places::Place) -> anyhow::Result<()> {
        let dir = self.h.options.report_dir.join("controllers").join(&self.ns);
        let (mode, config) = {
            let shared = self.h.controller.lock().await;
            (shared.mode().clone(), shared.config().clone())
        };
        let kueue_from = self
            .upgrades_kueue
            .then_some(self.h.kueue_upgrade_on_own_cluster)
            .flatten();
        let (cluster, controller) =
            OwnCluster::up(&self.h.options, &mode, config, &dir, place, kueue_from)
                .await
                .context("bringing up the scenario's own cluster")?;
        self.client = cluster.client.clone();
        self.own_cluster = Some(cluster);
        self.own_controller = Some(controller);
        self.note(format!(
            "a cluster of its own (its Kueue, fake nodes and {})",
            mode.name()
        ));
        Ok(())
    }

    /// For watches: the scenario's cluster's client without a read timeout.
    pub fn watch_client(&self) -> &kube::Client {
        self.own_cluster
            .as_ref()
            .map_or(&self.h.watch_client, |own| &own.watch_client)
    }

    /// The invariant monitor of the scenario's cluster.
    pub fn monitor(&self) -> &Monitor {
        self.own_cluster
            .as_ref()
            .map_or(&self.h.monitor, |own| &own.monitor)
    }

    /// The kubeconfig of the scenario's cluster.
    pub fn kubeconfig(&self) -> &std::path::Path {
        self.own_cluster
            .as_ref()
            .map_or(&self.h.kubeconfig, |own| &own.kubeconfig)
    }

    /// Log files whose new lines belong in a failed scenario's artifacts, by label: on its
    /// own cluster, its own controller's and Kueue's.
    pub async fn log_files(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        let Some(own) = &self.own_cluster else {
            return match self.own_controller.as_ref().and_then(|c| c.log_path()) {
                Some(log) => self.h.log_files_with(Some(log), &self.h.kueue_log),
                None => self.h.log_files().await,
            };
        };
        let controller_log = self.own_controller.as_ref().and_then(|c| c.log_path());
        self.h.log_files_with(controller_log, &own.kueue_log())
    }

    /// Starts the scenario's own controller: the pod an earlier scenario gave back (already
    /// running), or one made for it alone, labelled with its namespace.
    async fn start_own_controller(&mut self) -> anyhow::Result<()> {
        let mut own = match self.own_controller.take() {
            Some(pooled) => pooled,
            None => {
                let dir = self.h.options.report_dir.join("controllers").join(&self.ns);
                self.h.controller.lock().await.own(&self.ns, &dir)?
            }
        };
        let started = own.starts();
        let result = own.start(self.watch_client()).await;
        let label = own.own_label().unwrap_or_default().to_owned();
        self.own_controller = Some(own);
        result.context("starting the scenario's own controller")?;
        self.note(format!(
            "a controller of its own for the AppWrappers labelled {}={label}{}",
            crate::under_test::OWN_CONTROLLER_LABEL,
            if started > 0 {
                " (already running: started ahead, or kept from an earlier scenario)"
            } else {
                ""
            }
        ));
        Ok(())
    }

    pub async fn apply_cluster_queue(&self) -> anyhow::Result<()> {
        let mut queue = kueue_objects::cluster_queue(&self.cluster_queue, &self.queue_spec);
        if !self.flavors.is_empty() {
            offer_on(&mut queue, &self.flavors);
        }
        kueue_objects::apply(&self.client, &queue)
            .await
            .context("applying the ClusterQueue")?;
        Ok(())
    }

    /// Records that a step could not judge what it checks, and why.
    pub fn undecided(&self, why: String) {
        if let Ok(mut undecided) = self.undecided.lock() {
            undecided.get_or_insert(why);
        }
    }

    /// Records what a step did, for the artifacts of a failed scenario.
    pub fn note(&mut self, what: impl Into<String>) {
        let line = format!(
            "[{:>6.1}s] {}",
            self.started.elapsed().as_secs_f64(),
            what.into()
        );
        tracing::debug!(namespace = %self.ns, "{line}");
        self.journal.push(line);
    }

    /// The name an AppWrapper subject refers to.
    pub fn name_of(&self, subject: &Subject) -> anyhow::Result<String> {
        subject
            .0
            .clone()
            .or_else(|| self.current.clone())
            .ok_or_else(|| anyhow::anyhow!("no AppWrapper has been named yet in this scenario"))
    }

    /// Selects (and returns) the AppWrapper a step talks about; `it` refers to it from now on.
    pub fn select(&mut self, subject: &Subject) -> anyhow::Result<String> {
        let name = self.name_of(subject)?;
        self.current = Some(name.clone());
        Ok(name)
    }

    pub async fn appwrapper(&self, name: &str) -> anyhow::Result<Option<Value>> {
        objects::get_appwrapper(&self.client, &self.ns, name).await
    }

    pub async fn existing(&self, name: &str) -> anyhow::Result<Value> {
        self.appwrapper(name)
            .await?
            .ok_or_else(|| anyhow::anyhow!("AppWrapper {name} does not exist"))
    }

    pub fn draft_mut(&mut self, subject: &Subject) -> anyhow::Result<&mut Value> {
        let name = self.name_of(subject)?;
        self.drafts.get_mut(&name).ok_or_else(|| {
            anyhow::anyhow!(
                "AppWrapper {name} has no pending definition (was it already submitted?)"
            )
        })
    }
}

/// Makes a ClusterQueue offer the quota of its first flavor on each of `flavors` instead.
fn offer_on(queue: &mut Value, flavors: &[String]) {
    let list = &mut queue["spec"]["resourceGroups"][0]["flavors"];
    let quota = list[0].clone();
    *list = flavors
        .iter()
        .map(|name| {
            let mut flavor = quota.clone();
            flavor["name"] = json!(name);
            flavor
        })
        .collect();
}

/// `aw-<n>-<scenario words>`, a valid namespace name of at most 63 characters.
pub fn namespace_name(id: &str, scenario: &str) -> String {
    let mut slug = String::new();
    for c in scenario.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let name = format!("aw-{id}-{}", slug.trim_matches('-'));
    name.chars()
        .take(50)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_offers_the_same_quota_on_each_flavor() {
        let spec = ClusterQueueSpec {
            flavor: "suite".into(),
            ..ClusterQueueSpec::default()
        };
        let mut queue = kueue_objects::cluster_queue("cq", &spec);
        offer_on(&mut queue, &["a".to_string(), "b".to_string()]);
        let flavors = &queue["spec"]["resourceGroups"][0]["flavors"];
        assert_eq!(flavors[0]["name"], "a");
        assert_eq!(flavors[1]["name"], "b");
        assert_eq!(flavors[0]["resources"], flavors[1]["resources"]);
    }

    #[test]
    fn namespace_names_are_valid() {
        assert_eq!(
            namespace_name("k3", "Running → Failed: a component!"),
            "aw-k3-running-failed-a-component"
        );
        let long = namespace_name("k12", &"x ".repeat(100));
        assert!(long.len() <= 50 && !long.ends_with('-'), "{long}");
    }
}
