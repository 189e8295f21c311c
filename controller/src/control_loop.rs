//! The controller loop: watches, reconcile = observe → decide → act, backoff, shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::channel::oneshot;
use futures::{FutureExt, StreamExt, TryStreamExt, future};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use crate::act::{ActError, Actor};
use crate::api::{APPWRAPPER_LABEL, AppWrapper, CONTROLLER_NAME};
use crate::cache::{Caches, wrapped_kinds};
use crate::config::{AutopilotConfig, Config};
use crate::decide::confirm::needs_fresh_reads;
use crate::decide::{Decision, decide};
use crate::discovery::ResourceCache;
use crate::events::EventRecorder;
use crate::leader::{LeaderElector, LeaseSettings};
use crate::metrics::{Metrics, ReconcileResult};
use crate::node_health::NoExecuteWatch;
use crate::observe::{ObserveError, Observer};
use crate::own_writes::OwnWrites;

/// `source.component` of the Events the controller emits (the reference's recorder name).
pub const EVENT_REPORTER: &str = "appwrappers";

const BACKOFF_BASE: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1000);

/// How long an AppWrapper's triggers must be quiet before it is reconciled, so that the events
/// that arrive together (its pods starting, Kueue's writes beside ours) make one reconcile and
/// one status write. Measured on 200 AppWrappers (`bench load --seed 42`): 0 ms 11.0 status
/// writes per AppWrapper, 100 ms 9.3, 300 ms 9.1 with twice the admission → Running latency.
const RECONCILE_DEBOUNCE: Duration = Duration::from_millis(100);

/// How long after its start the controller waits for its pod and Job watches' first lists
/// before it reconciles from API reads instead, and how often it looks again meanwhile.
const WATCH_SYNC_WAIT: Duration = Duration::from_secs(30);
const WATCH_SYNC_POLL: Duration = Duration::from_millis(200);

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("reading appwrapper: {0}")]
    Fetch(#[source] kube::Error),
    #[error(transparent)]
    Observe(#[from] ObserveError),
    #[error(transparent)]
    Act(#[from] ActError),
    #[error("{0}")]
    Decide(String),
}

struct Context {
    client: Client,
    config: Config,
    resources: ResourceCache,
    recorder: EventRecorder,
    metrics: Arc<Metrics>,
    nodes: Option<Store<Node>>,
    caches: Arc<Caches>,
    own_writes: OwnWrites<ObjectRef<AppWrapper>>,
    failures: Mutex<HashMap<ObjectRef<AppWrapper>, u32>>,
    started: Instant,
    appwrappers: Store<AppWrapper>,
    wrapped_kinds_watched: tokio::sync::OnceCell<()>,
}

/// A running controller. Await it to wait until it stops.
pub struct Handle {
    stop: Mutex<Option<oneshot::Sender<()>>>,
    task: JoinHandle<anyhow::Result<()>>,
    metrics: Arc<Metrics>,
}

impl Handle {
    /// Asks the controller to stop after the reconciles in flight; returns at once.
    pub fn stop(&self) {
        if let Ok(mut stop) = self.stop.lock()
            && let Some(tx) = stop.take()
        {
            let _ = tx.send(());
        }
    }

    /// Stops the controller and waits until it has stopped.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.stop();
        self.await
    }

    /// Stops the controller abruptly, as a crash would: the task is aborted, so reconciles in
    /// flight are dropped where they stand (their next await point) and nothing is finished,
    /// released or cleaned up; a held leader-election Lease simply expires.
    pub async fn abort(self) {
        self.task.abort();
        if let Err(e) = self.task.await
            && !e.is_cancelled()
        {
            tracing::warn!("the controller task failed before it was aborted: {e}");
        }
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }
}

impl Future for Handle {
    type Output = anyhow::Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        self.task
            .poll_unpin(cx)
            .map(|r| r.context("controller task failed").and_then(|r| r))
    }
}

/// Starts the AppWrapper controller on `client`. With `controllerManager.leaderElection` it
/// reconciles only while it holds the leader-election Lease.
pub async fn run(config: Config, client: Client) -> anyhow::Result<Handle> {
    run_with_metrics(config, client, Arc::new(Metrics::default())).await
}

/// [`run`], counting into `metrics` (which outlive the controller, e.g. across leaderships).
pub async fn run_with_metrics(
    config: Config,
    client: Client,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Handle> {
    run_selected(config, client, metrics, None).await
}

/// [`run_with_metrics`] for the AppWrappers that match a label selector only (all of them
/// with `None`), so that controllers can share a cluster, each with its own AppWrappers.
pub async fn run_selected(
    config: Config,
    client: Client,
    metrics: Arc<Metrics>,
    selector: Option<String>,
) -> anyhow::Result<Handle> {
    config.validate()?;
    let appwrappers: Api<AppWrapper> = Api::all(client.clone());
    let mut probe = ListParams::default().limit(1);
    if let Some(selector) = &selector {
        probe = probe.labels(selector);
    }
    appwrappers.list(&probe).await.map_err(|e| match &selector {
        Some(selector) => anyhow::Error::new(e).context(format!(
            "listing the AppWrappers that match the selector {selector:?} failed; is the selector valid and the CRD installed?"
        )),
        None => anyhow::Error::new(e)
            .context("the AppWrapper API is not served; is the CRD installed?"),
    })?;
    let elector = if config.controller_manager.leader_election {
        let settings = LeaseSettings::from_config(&config)?;
        Some(LeaderElector::new(client.clone(), settings))
    } else {
        None
    };

    // While electing, the reconciler writes only while it surely leads.
    let client = match &elector {
        Some(elector) => crate::leader::fence::fenced_client(client, elector.fence()),
        None => client,
    };
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let reconciler = {
        let metrics = Arc::clone(&metrics);
        move |stop: oneshot::Receiver<()>| {
            reconcile_until(config, client, metrics, selector.clone(), stop)
        }
    };
    // In the caller's span, so that a process running several controllers (the conformance
    // harness: one per cluster) can tell their log lines apart.
    let task = tokio::spawn(
        async move {
            match elector {
                Some(elector) => elector.lead(stop_rx.map(|_| ()), reconciler).await?,
                None => reconciler(stop_rx).await,
            }
            Ok(())
        }
        .in_current_span(),
    );
    Ok(Handle {
        stop: Mutex::new(Some(stop_tx)),
        task,
        metrics,
    })
}

/// Runs the controller (and the node watch) until `stop` fires.
async fn reconcile_until(
    config: Config,
    client: Client,
    metrics: Arc<Metrics>,
    selector: Option<String>,
    stop: oneshot::Receiver<()>,
) {
    let appwrappers: Api<AppWrapper> = Api::all(client.clone());
    let autopilot = config
        .appwrapper
        .autopilot
        .clone()
        .filter(|a| a.monitor_nodes);
    let (nodes, node_writer) = match &autopilot {
        Some(_) => {
            let (reader, writer) = reflector::store();
            (Some(reader), Some(writer))
        }
        None => (None, None),
    };

    let (store, writer) = reflector::store();
    let ctx = Arc::new(Context {
        recorder: EventRecorder::new(client.clone(), EVENT_REPORTER),
        client: client.clone(),
        config,
        resources: ResourceCache::default(),
        metrics,
        nodes,
        caches: Arc::default(),
        own_writes: OwnWrites::default(),
        failures: Mutex::new(HashMap::new()),
        started: Instant::now(),
        appwrappers: store.clone(),
        wrapped_kinds_watched: tokio::sync::OnceCell::new(),
    });

    let labelled = || watcher::Config::default().labels(APPWRAPPER_LABEL);
    let queued = Arc::clone(&ctx.metrics);
    let selected = match &selector {
        Some(selector) => watcher::Config::default().labels(selector),
        None => watcher::Config::default(),
    };
    // managedFields can outweigh the rest of an AppWrapper, and nothing here reads them; nor
    // the templates of what is deployed (see store_trim).
    let watched = watcher(appwrappers, selected).modify(|aw| {
        aw.managed_fields_mut().clear();
        crate::store_trim::drop_unread_templates(aw);
    });
    let triggers = reflector::reflector(writer, watched)
        .applied_objects()
        .inspect_ok(move |aw| queued.queue_add(key_of(&ObjectRef::from_obj(aw))));
    ctx.metrics.controller_started();
    let dequeued = Arc::clone(&ctx.metrics);
    // The caches take each event before it triggers a reconcile, so that the reconcile sees it.
    let caches = Arc::clone(&ctx.caches);
    let pods = watcher(Api::<Pod>::all(client.clone()), labelled())
        .default_backoff()
        .inspect_ok(move |event| caches.pod_event(event))
        .touched_objects();
    let caches = Arc::clone(&ctx.caches);
    let jobs = watcher(Api::<Job>::all(client.clone()), labelled())
        .default_backoff()
        .inspect_ok(move |event| caches.job_event(event))
        .touched_objects();
    let listed = store.clone();
    let mut controller = Controller::for_stream(triggers, store)
        .watches_stream(pods, owner(&ctx.metrics))
        .watches_stream(jobs, owner(&ctx.metrics));
    if let (Some(writer), Some(autopilot)) = (node_writer, autopilot) {
        controller =
            controller.reconcile_on(unhealthy_node_triggers(writer, autopilot, &client, &ctx));
    }
    let stop = stop.shared();
    let controller = controller
        .with_config(controller::Config::default().debounce(RECONCILE_DEBOUNCE))
        .graceful_shutdown_on(stop.clone().map(|_| ()))
        .run(reconcile, error_policy, ctx)
        .for_each(move |result| {
            if let Err(e) = result {
                // controller-runtime would dequeue and reconcile it (finding nothing to do);
                // kube-runtime drops it, which the work-queue metrics must see too.
                if let controller::Error::ObjectNotFound(gone) = &e {
                    dequeued.queue_take(&queue_key(gone.namespace.as_deref(), &gone.name));
                }
                tracing::debug!("controller: {e}");
            }
            future::ready(())
        });
    // kube-runtime holds its runner until the AppWrapper store has listed, and a graceful
    // shutdown cuts that list off: stopped before the list, it would wait for ever. No
    // reconcile has begun then, so ending at once loses nothing.
    let stopped_unlisted = async move {
        let _ = stop.await;
        if listed.wait_until_ready().now_or_never().is_some() {
            future::pending::<()>().await;
        }
    };
    tracing::info!("appwrapper controller started");
    future::select(Box::pin(controller), Box::pin(stopped_unlisted)).await;
    tracing::info!("appwrapper controller stopped");
}

/// Starts the watches of the kinds the AppWrappers wrap, so that a restarted controller reads
/// those from its caches from its first reconcile on, as it does pods and Jobs, instead of
/// each reconcile getting them from the API server meanwhile. Called by the first reconcile:
/// kube-runtime reconciles only once the AppWrapper store has listed (and a second waiter on
/// the store's readiness may never be woken, as its one-shot channel keeps one waker).
async fn watch_wrapped_kinds(ctx: &Context) {
    let state = ctx.appwrappers.state();
    let mut watched = Vec::new();
    for (api_version, kind) in wrapped_kinds(state.iter().map(AsRef::as_ref)) {
        match ctx
            .resources
            .resolve(&ctx.client, &api_version, &kind)
            .await
        {
            Ok(resource) => {
                if ctx.caches.watch_kind(&ctx.client, &resource) {
                    watched.push((api_version, kind));
                }
            }
            Err(e) => tracing::info!("not watching {kind} {api_version} at the start: {e}"),
        }
    }
    ctx.caches.wrapped_at_start(watched);
}

/// The node watch, feeding the node store; it triggers the AppWrappers with pods on a node
/// that newly has an Autopilot NoExecute resource.
fn unhealthy_node_triggers(
    writer: reflector::store::Writer<Node>,
    autopilot: AutopilotConfig,
    client: &Client,
    ctx: &Arc<Context>,
) -> impl futures::Stream<Item = ObjectRef<AppWrapper>> + Send + 'static {
    let caches = Arc::clone(&ctx.caches);
    let metrics = Arc::clone(&ctx.metrics);
    let mut unhealthy = NoExecuteWatch::default();
    reflector::reflector(
        writer,
        watcher(Api::<Node>::all(client.clone()), watcher::Config::default()),
    )
    .default_backoff()
    .applied_objects()
    .filter_map(|node| future::ready(node.inspect_err(|e| tracing::warn!("node watch: {e}")).ok()))
    .flat_map(move |node| {
        let on_node = if unhealthy.newly_unhealthy(&node, &autopilot) {
            caches.appwrappers_on_node(&node.name_any())
        } else {
            Default::default()
        };
        let metrics = Arc::clone(&metrics);
        futures::stream::iter(on_node.into_iter().map(move |(namespace, name)| {
            let aw = ObjectRef::new(&name).within(&namespace);
            metrics.queue_add(key_of(&aw));
            aw
        }))
    })
}

/// An AppWrapper in the work-queue metrics.
fn queue_key(namespace: Option<&str>, name: &str) -> String {
    format!("{}/{name}", namespace.unwrap_or_default())
}

fn key_of(aw: &ObjectRef<AppWrapper>) -> String {
    queue_key(aw.namespace.as_deref(), &aw.name)
}

/// [`owner_of`], counting the trigger in the work-queue metrics.
fn owner<K: ResourceExt>(
    metrics: &Arc<Metrics>,
) -> impl Fn(K) -> Option<ObjectRef<AppWrapper>> + use<K> {
    let metrics = Arc::clone(metrics);
    move |obj| {
        let owner = owner_of(obj)?;
        metrics.queue_add(key_of(&owner));
        Some(owner)
    }
}

/// Maps a labelled pod or wrapped object to its AppWrapper.
fn owner_of<K: ResourceExt>(obj: K) -> Option<ObjectRef<AppWrapper>> {
    let name = obj.labels().get(APPWRAPPER_LABEL)?;
    let namespace = obj.namespace()?;
    Some(ObjectRef::new(name).within(&namespace))
}

async fn reconcile(trigger: Arc<AppWrapper>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let key = key_of(&ObjectRef::from_obj(&*trigger));
    ctx.metrics.queue_take(&key);
    let started = Instant::now();
    let result = reconcile_appwrapper(&trigger, &ctx).await;
    let outcome = match &result {
        Ok((_, outcome)) => {
            if let Ok(mut failures) = ctx.failures.lock() {
                failures.remove(&ObjectRef::from_obj(&*trigger));
            }
            *outcome
        }
        Err(_) => ReconcileResult::Error,
    };
    ctx.metrics.count_reconcile(outcome, started.elapsed());
    result.map(|(requeue_after, _)| match requeue_after {
        Some(after) => {
            ctx.metrics.queue_add_after(key, after);
            Action::requeue(after)
        }
        None => Action::await_change(),
    })
}

/// When to reconcile again (`None`: on the next change), and how the reconcile ended.
type Outcome = (Option<Duration>, ReconcileResult);

async fn reconcile_appwrapper(
    trigger: &AppWrapper,
    ctx: &Context,
) -> Result<Outcome, ReconcileError> {
    ctx.wrapped_kinds_watched
        .get_or_init(|| watch_wrapped_kinds(ctx))
        .await;
    if let Some(poll) = wait_for_watches(ctx.caches.watched_synced(), ctx.started.elapsed()) {
        return Ok((Some(poll), ReconcileResult::RequeueAfter));
    }
    let key = ObjectRef::from_obj(trigger);
    if ctx
        .own_writes
        .is_behind(&key, &trigger.resource_version().unwrap_or_default())
    {
        return Ok((None, ReconcileResult::Success));
    }
    let mut versions = Vec::new();
    let result = decide_and_act(trigger.clone(), ctx, &mut versions).await;
    ctx.own_writes.record(key, &versions);
    result
}

/// Observes through the caches, decides, and applies the decision; a decision that must not
/// rest on the caches is made again on fresh reads first. `versions` collects the
/// AppWrapper's resourceVersions as read and as written.
async fn decide_and_act(
    mut aw: AppWrapper,
    ctx: &Context,
    versions: &mut Vec<String>,
) -> Result<Outcome, ReconcileError> {
    let done = (None, ReconcileResult::Success);
    let mine = |aw: &AppWrapper| {
        aw.spec
            .managed_by
            .as_deref()
            .is_none_or(|m| m == CONTROLLER_NAME)
    };
    if !mine(&aw) {
        return Ok(done);
    }
    let mut observer = Observer {
        client: &ctx.client,
        resources: &ctx.resources,
        config: &ctx.config,
        nodes: ctx.nodes.as_ref(),
        caches: Some(&ctx.caches),
    };
    let mut observation = observer.observe(&aw).await?;
    let mut status = aw.status.clone().unwrap_or_default();
    let cached = decide(&status, &observation, Timestamp::now(), &ctx.config);
    versions.extend(aw.resource_version());
    if needs_fresh_reads(&status, &cached) {
        let api: Api<AppWrapper> =
            Api::namespaced(ctx.client.clone(), &aw.namespace().unwrap_or_default());
        let Some(fresh) = api
            .get_opt(&aw.name_any())
            .await
            .map_err(ReconcileError::Fetch)?
        else {
            return Ok(done);
        };
        aw = fresh;
        if !mine(&aw) {
            return Ok(done);
        }
        versions.extend(aw.resource_version());
        observer.caches = None;
        observation = observer.observe(&aw).await?;
        status = aw.status.clone().unwrap_or_default();
    }
    let actor = Actor {
        client: &ctx.client,
        resources: &ctx.resources,
        recorder: &ctx.recorder,
        metrics: &ctx.metrics,
    };
    // Each pass creates at most one component; the outcome feeds the next decision.
    for _ in 0..aw.spec.components.len() + 2 {
        let decision = decide(&status, &observation, Timestamp::now(), &ctx.config);
        let created = actor.apply(&mut aw, &status, &decision, versions).await;
        match created? {
            Some(outcome) => {
                status = decision.status;
                observation.create_outcome = Some(outcome);
            }
            None => return finish(decision),
        }
    }
    Ok((Some(Duration::ZERO), ReconcileResult::Requeue))
}

/// When to look again rather than reconcile now: while the watches have not listed yet, for a
/// while after the start (a restarted controller would otherwise read every AppWrapper's pods
/// from the API server at once).
fn wait_for_watches(synced: bool, since_start: Duration) -> Option<Duration> {
    (!synced && since_start < WATCH_SYNC_WAIT).then_some(WATCH_SYNC_POLL)
}

fn finish(decision: Decision) -> Result<Outcome, ReconcileError> {
    if let Some(error) = decision.error {
        return Err(ReconcileError::Decide(error));
    }
    Ok(match decision.requeue_after {
        Some(after) => (Some(after), ReconcileResult::RequeueAfter),
        None => (None, ReconcileResult::Success),
    })
}

fn error_policy(aw: Arc<AppWrapper>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let attempts = ctx.failures.lock().map_or(1, |mut failures| {
        let n = failures.entry(ObjectRef::from_obj(&*aw)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    });
    let delay = backoff(attempts);
    ctx.metrics
        .queue_add_after(key_of(&ObjectRef::from_obj(&*aw)), delay);
    let conflict = matches!(error, ReconcileError::Act(e) if e.is_conflict());
    if conflict {
        tracing::debug!(appwrapper = %aw.name_any(), "reconcile conflict, retrying in {delay:?}: {error}");
    } else {
        tracing::error!(appwrapper = %aw.name_any(), "reconcile failed, retrying in {delay:?}: {error}");
    }
    Action::requeue(delay)
}

/// controller-runtime's per-item backoff: 5 ms doubling up to 1000 s.
fn backoff(attempts: u32) -> Duration {
    let exponent = attempts.saturating_sub(1).min(20);
    BACKOFF_BASE.saturating_mul(1 << exponent).min(BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_5ms_to_1000s() {
        assert_eq!(backoff(1), Duration::from_millis(5));
        assert_eq!(backoff(2), Duration::from_millis(10));
        assert_eq!(backoff(11), Duration::from_millis(5 << 10));
        assert_eq!(backoff(30), Duration::from_secs(1000));
    }

    #[rstest::rstest]
    #[case(false, 0, Some(WATCH_SYNC_POLL))]
    #[case(false, 29, Some(WATCH_SYNC_POLL))]
    #[case(false, 30, None)]
    #[case(true, 0, None)]
    #[case(true, 60, None)]
    fn reconciles_wait_for_the_watches_only_for_a_while(
        #[case] synced: bool,
        #[case] since_start_s: u64,
        #[case] expected: Option<Duration>,
    ) {
        assert_eq!(
            wait_for_watches(synced, Duration::from_secs(since_start_s)),
            expected
        );
    }
}
