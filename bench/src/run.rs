//! One run of a plan on a stand: its namespace and queues, the workloads submitted and
//! watched, Deployment-shaped AppWrappers deleted once they have run, progress printed, and
//! at the end everything deleted and what was left counted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use appwrapper_controller::api::APPWRAPPER_LABEL;
use chrono::{DateTime, Utc};
use clusters::kueue::objects::{self as kueue_objects, ClusterQueueSpec, Quota, TEST_QUEUE};
use environment::FLAVOR;
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt as _, watcher};
use monitor::Monitor;
use serde_json::{Value, json};

use crate::manifest::{self, DEPLOYMENT_RUN_SECONDS};
use crate::plan::{Ending, Plan, Planned};
use crate::stand::bench_client;
use crate::workload_timeline::{End, News, Observation, Timeline};

/// What the plan is submitted as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workloads {
    AppWrappers,
    PlainJobs,
}

impl Workloads {
    fn resource(self) -> ApiResource {
        match self {
            Workloads::AppWrappers => objects::appwrapper_resource(),
            Workloads::PlainJobs => ApiResource::erase::<Job>(&()),
        }
    }

    fn observe(self, object: &Value) -> Observation {
        match self {
            Workloads::AppWrappers => Observation::of_appwrapper(object),
            Workloads::PlainJobs => Observation::of_job(object),
        }
    }

    /// How `w` is planned to end as these workloads: a Deployment-shaped plain Job succeeds.
    pub fn planned_end(self, w: &Planned) -> End {
        match (w.ending(), self) {
            (Ending::Succeeded, _) | (Ending::Deleted, Workloads::PlainJobs) => End::Succeeded,
            (Ending::Failed, _) => End::Failed,
            (Ending::Deleted, Workloads::AppWrappers) => End::Deleted,
        }
    }

    fn manifest(self, plan: &Plan, index: usize, namespace: &str) -> anyhow::Result<Value> {
        let w = &plan.workloads[index];
        match self {
            Workloads::AppWrappers => manifest::appwrapper(w, namespace, TEST_QUEUE),
            Workloads::PlainJobs => manifest::plain_job(w, namespace, TEST_QUEUE),
        }
    }
}

/// How long creating one workload is retried (Kueue's webhook refuses while Kueue is down).
const CREATE_PATIENCE: Duration = Duration::from_secs(180);
/// Create requests in flight at once.
const CREATES_AT_ONCE: usize = 8;
/// How long the final cleanup waits for the workloads to be gone.
const CLEANUP_PATIENCE: Duration = Duration::from_secs(240);
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

pub struct Run {
    pub namespace: String,
    workloads: Workloads,
    plan: Arc<Plan>,
    client: kube::Client,
    timeline: Arc<Mutex<Timeline>>,
    started: Instant,
    pub started_at: DateTime<Utc>,
    monitor: Option<Monitor>,
    watch: tokio::task::JoinHandle<()>,
    create_retries: Arc<Mutex<u64>>,
}

/// What a run leaves for the report.
pub struct Conclusion {
    pub timeline: Timeline,
    pub violations: Vec<String>,
    /// States the monitor could not check: a re-list of its watch skipped them, or a write
    /// of unknown outcome may have left them.
    pub unchecked: Vec<String>,
    /// Where the monitor read the AppWrappers' states; `None` for plain Jobs.
    pub monitor_source: Option<String>,
    /// Pods left once every workload was gone.
    pub pods_left: usize,
    /// Those pods and the wrapped objects left, described.
    pub leftovers: Vec<String>,
    /// Workloads still there when the cleanup gave up.
    pub undeleted: Vec<String>,
    pub create_retries: u64,
    pub ended_at: DateTime<Utc>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Run {
    /// Creates the namespace with a ClusterQueue whose quota admits `at_once` workloads
    /// (each asks for about one CPU), starts watching, and for AppWrappers the invariant
    /// monitor.
    pub async fn begin(
        kubeconfig: &std::path::Path,
        plan: Arc<Plan>,
        workloads: Workloads,
        namespace: String,
        at_once: usize,
        monitor_source: monitor::Source,
    ) -> anyhow::Result<Run> {
        let client = bench_client(kubeconfig, true).await?;
        let watch_client = bench_client(kubeconfig, false).await?;
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": { "name": namespace, "labels": { "awconf.dev/suite": "bench" } }
        }))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .with_context(|| format!("creating namespace {namespace}"))?;
        let spec = ClusterQueueSpec {
            flavor: FLAVOR.into(),
            quota: Quota {
                cpu: at_once.to_string(),
                memory: "1Ti".into(),
                gpus: 0,
            },
            cohort: None,
            preemption: None,
        };
        kueue_objects::namespace_queue(&client, &namespace, &spec)
            .await
            .context("creating the queues")?;
        let monitor = match workloads {
            Workloads::AppWrappers => {
                let monitor = Monitor::start(
                    watch_client.clone(),
                    monitor_source,
                    Duration::from_secs(60),
                )
                .await?;
                println!("the invariant monitor reads {}", monitor.source());
                Some(monitor)
            }
            Workloads::PlainJobs => None,
        };
        let timeline = Arc::new(Mutex::new(Timeline::new(
            plan.workloads.iter().map(|w| w.name.as_str()),
        )));
        let started = Instant::now();
        let watch = tokio::spawn(watch(
            watch_client,
            client.clone(),
            namespace.clone(),
            workloads,
            Arc::clone(&plan),
            Arc::clone(&timeline),
            started,
        ));
        Ok(Run {
            namespace,
            workloads,
            plan,
            client,
            timeline,
            started,
            started_at: Utc::now(),
            monitor,
            watch,
            create_retries: Arc::default(),
        })
    }

    /// The instant the timeline counts from.
    pub fn origin(&self) -> Instant {
        self.started
    }

    /// Submits every workload and waits until all have ended or `timeout` has passed,
    /// printing progress.
    pub async fn drive(&self, timeout: Duration) {
        let deadline = self.started + timeout;
        let submit = async {
            futures::stream::iter(0..self.plan.workloads.len())
                .map(|i| self.create(i))
                .buffer_unordered(CREATES_AT_ONCE)
                .collect::<Vec<()>>()
                .await;
        };
        let wait = async {
            let mut last_print = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let (tally, done) = {
                    let t = lock(&self.timeline);
                    (t.tally(), t.all_ended())
                };
                if done || Instant::now() >= deadline || last_print.elapsed() >= PROGRESS_EVERY {
                    println!("  [{:>5.0}s] {tally}", self.started.elapsed().as_secs_f64());
                    last_print = Instant::now();
                }
                if done {
                    return;
                }
                if Instant::now() >= deadline {
                    println!(
                        "  gave up waiting after {}s: {} not ended",
                        timeout.as_secs(),
                        tally.total - tally.ended()
                    );
                    return;
                }
            }
        };
        tokio::join!(submit, wait);
    }

    async fn create(&self, index: usize) {
        let name = self.plan.workloads[index].name.clone();
        let object = match self.workloads.manifest(&self.plan, index, &self.namespace) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("  {name}: cannot build its manifest: {e:#}");
                return;
            }
        };
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &self.workloads.resource(),
        );
        let Ok(object) = serde_json::from_value::<DynamicObject>(object) else {
            eprintln!("  {name}: its manifest is not an object");
            return;
        };
        let give_up = Instant::now() + CREATE_PATIENCE;
        loop {
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => break,
                Err(kube::Error::Api(status)) if status.code == 409 => break,
                Err(e) if Instant::now() < give_up => {
                    let mut retries = lock(&self.create_retries);
                    if *retries == 0 {
                        println!("  creating {name} failed, retrying (shown once): {e}");
                    }
                    *retries += 1;
                }
                Err(e) => {
                    eprintln!("  {name}: not created within {CREATE_PATIENCE:?}: {e}");
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let at = self.started.elapsed().as_secs_f64();
        lock(&self.timeline).created(&name, at);
    }

    /// Deletes every workload left, waits until they are gone, counts what they left, and
    /// collects the monitor's verdict on the namespace.
    pub async fn conclude(self) -> Conclusion {
        let timeline = lock(&self.timeline).clone();
        let undeleted = self.delete_all().await;
        let (pods_left, leftovers) = match self.leftovers().await {
            Ok(found) => found,
            Err(e) => (0, vec![format!("could not list what is left: {e:#}")]),
        };
        let (mut violations, mut unchecked) = (Vec::new(), Vec::new());
        let mut monitor_source = None;
        if let Some(monitor) = &self.monitor {
            monitor
                .settle(&self.namespace, Duration::from_secs(30))
                .await;
            monitor_source = Some(format!(
                "{} ({})",
                monitor.source(),
                monitor.release_checks()
            ));
            for v in monitor.violations_in(&self.namespace) {
                let text = format!("{}: {}", v.name, v.message);
                if v.is_unchecked() {
                    unchecked.push(text);
                } else {
                    violations.push(text);
                }
            }
            monitor.stop();
        }
        self.watch.abort();
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        if let Err(e) = namespaces
            .delete(&self.namespace, &DeleteParams::default())
            .await
        {
            tracing::warn!("deleting namespace {}: {e}", self.namespace);
        }
        let create_retries = *lock(&self.create_retries);
        Conclusion {
            timeline,
            violations,
            unchecked,
            monitor_source,
            pods_left,
            leftovers,
            undeleted,
            create_retries,
            ended_at: Utc::now(),
        }
    }

    /// Returns the workloads still there after [`CLEANUP_PATIENCE`].
    async fn delete_all(&self) -> Vec<String> {
        let api: Api<DynamicObject> = Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &self.workloads.resource(),
        );
        // A Job goes only after its pods (foreground); an AppWrapper's controller deletes
        // what it wraps before it lets the AppWrapper go.
        let params = match self.workloads {
            Workloads::AppWrappers => DeleteParams::background(),
            Workloads::PlainJobs => DeleteParams::foreground(),
        };
        let give_up = Instant::now() + CLEANUP_PATIENCE;
        let mut asked = false;
        loop {
            let left: Vec<String> = match api.list(&ListParams::default()).await {
                Ok(list) => list
                    .items
                    .into_iter()
                    .filter_map(|o| o.metadata.name)
                    .collect(),
                Err(e) => {
                    tracing::warn!("listing what is left to delete: {e}");
                    vec!["?".into()]
                }
            };
            if left.is_empty() {
                return left;
            }
            if Instant::now() >= give_up {
                println!(
                    "  {} workloads not gone {}s after their deletion",
                    left.len(),
                    CLEANUP_PATIENCE.as_secs()
                );
                return left;
            }
            if !asked {
                println!("  deleting the {} workloads left", left.len());
                for name in &left {
                    if let Err(e) = api.delete(name, &params).await {
                        tracing::warn!("deleting {name}: {e}");
                    }
                }
                asked = true;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Pods of the workloads, and (AppWrappers) the kinds they wrap, left in the namespace.
    async fn leftovers(&self) -> anyhow::Result<(usize, Vec<String>)> {
        let (client, ns) = (&self.client, self.namespace.as_str());
        let list = ListParams::default();
        let pods = Api::<Pod>::namespaced(client.clone(), ns)
            .list(&list)
            .await?;
        let mut left: Vec<String> = pods
            .items
            .iter()
            .map(|p| {
                let owner = p
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(APPWRAPPER_LABEL))
                    .map(|aw| format!(" of {aw}"))
                    .unwrap_or_default();
                format!(
                    "pod {}{owner} ({})",
                    p.metadata.name.as_deref().unwrap_or_default(),
                    objects::pod_phase(p)
                )
            })
            .collect();
        let pods_left = left.len();
        if self.workloads == Workloads::AppWrappers {
            let names = |items: Vec<kube::api::ObjectMeta>, kind: &str| {
                items
                    .into_iter()
                    .map(|m| format!("{kind} {}", m.name.unwrap_or_default()))
                    .collect::<Vec<_>>()
            };
            let jobs = Api::<Job>::namespaced(client.clone(), ns)
                .list(&list)
                .await?;
            left.extend(names(
                jobs.items.into_iter().map(|o| o.metadata).collect(),
                "Job",
            ));
            let deployments = Api::<Deployment>::namespaced(client.clone(), ns)
                .list(&list)
                .await?;
            left.extend(names(
                deployments.items.into_iter().map(|o| o.metadata).collect(),
                "Deployment",
            ));
            let services = Api::<Service>::namespaced(client.clone(), ns)
                .list(&list)
                .await?;
            left.extend(names(
                services.items.into_iter().map(|o| o.metadata).collect(),
                "Service",
            ));
        }
        Ok((pods_left, left))
    }
}

/// Feeds the timeline from a watch on the namespace's workloads; deletes each
/// Deployment-shaped AppWrapper [`DEPLOYMENT_RUN_SECONDS`] after it was first seen Running.
async fn watch(
    watch_client: kube::Client,
    client: kube::Client,
    namespace: String,
    workloads: Workloads,
    plan: Arc<Plan>,
    timeline: Arc<Mutex<Timeline>>,
    started: Instant,
) {
    let resource = workloads.resource();
    let api: Api<DynamicObject> = Api::namespaced_with(watch_client, &namespace, &resource);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    // The names a re-list (after the watch broke, e.g. an API server restart) has shown so far:
    // what it does not show was deleted while nobody watched.
    let mut relisted: Option<std::collections::HashSet<String>> = None;
    while let Some(event) = events.next().await {
        let at = started.elapsed().as_secs_f64();
        let (object, gone) = match event {
            Ok(watcher::Event::Init) => {
                relisted = Some(Default::default());
                continue;
            }
            Ok(watcher::Event::InitApply(o)) => {
                if let (Some(seen), Some(name)) = (&mut relisted, &o.metadata.name) {
                    seen.insert(name.clone());
                }
                (o, false)
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(seen) = relisted.take() {
                    lock(&timeline).vanished_unless(&seen, at);
                }
                continue;
            }
            Ok(watcher::Event::Apply(o)) => (o, false),
            Ok(watcher::Event::Delete(o)) => (o, true),
            Err(e) => {
                tracing::debug!("workload watch: {e}");
                continue;
            }
        };
        let Some(name) = object.metadata.name.clone() else {
            continue;
        };
        let news = {
            let mut t = lock(&timeline);
            if gone {
                t.vanished(&name, at)
            } else {
                t.observed(&name, workloads.observe(&objects::to_value(&object)), at)
            }
        };
        let planned_deletion = plan
            .get(&name)
            .is_some_and(|w| w.ending() == Ending::Deleted);
        if workloads == Workloads::AppWrappers
            && planned_deletion
            && news.contains(&News::BecameRunning)
        {
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), &namespace, &resource);
            tokio::spawn(delete_after(
                api,
                name,
                Duration::from_secs(u64::from(DEPLOYMENT_RUN_SECONDS)),
            ));
        }
    }
}

async fn delete_after(api: Api<DynamicObject>, name: String, wait: Duration) {
    tokio::time::sleep(wait).await;
    let give_up = Instant::now() + CREATE_PATIENCE;
    loop {
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 404 => return,
            Err(e) if Instant::now() >= give_up => {
                eprintln!("  {name}: not deleted: {e}");
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Shape;
    use rstest::rstest;

    #[rstest]
    #[case(Shape::Job, false, Workloads::AppWrappers, End::Succeeded)]
    #[case(Shape::Pods, true, Workloads::AppWrappers, End::Failed)]
    #[case(Shape::Deployment, false, Workloads::AppWrappers, End::Deleted)]
    #[case(Shape::Deployment, false, Workloads::PlainJobs, End::Succeeded)]
    #[case(Shape::Mixed, true, Workloads::PlainJobs, End::Failed)]
    fn planned_ends(
        #[case] shape: Shape,
        #[case] fails: bool,
        #[case] workloads: Workloads,
        #[case] end: End,
    ) {
        let w = Planned {
            name: "aw".into(),
            shape,
            pods: 2,
            fails,
            run_seconds: 1,
        };
        assert_eq!(workloads.planned_end(&w), end);
    }
}
