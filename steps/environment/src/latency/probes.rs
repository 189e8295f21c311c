//! The probes that measure how late the stand and the controller under test answer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use objects::PROBE_LABEL;
use serde_json::json;

use super::{SLOWEST_REACTION_MS, reactions, record, set_start_slack, stand};

const STAND_PROBES: usize = 20;
const SLEEP: Duration = Duration::from_millis(50);
/// How often the stand is probed during the run.
const EVERY: Duration = Duration::from_secs(1);
/// How often the controller is probed: each probe is one create and one delete.
const CONTROLLER_EVERY: Duration = Duration::from_secs(2);
/// A reaction slower than this is not waited for: the controller is down, not slow.
const GIVE_UP: Duration = Duration::from_secs(60);
/// After the controller starts it catches up with everything at once: probes that begin this
/// soon after measure the start, not a reaction.
const SETTLE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(25);
/// Where the controller probes live: every cluster has it, and no scenario uses it.
const NAMESPACE: &str = "default";

/// Counts the stops and starts of the controller under test.
static INTERRUPTIONS: AtomicU64 = AtomicU64::new(0);
/// When the controller last stopped or started, in milliseconds since [`epoch`].
static INTERRUPTED_MS: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// The controller under test is stopping, being killed or starting: a probe it overlaps
/// measures that, not how late the controller reacts.
pub fn controller_interrupted() {
    INTERRUPTIONS.fetch_add(1, Ordering::SeqCst);
    INTERRUPTED_MS.store(epoch().elapsed().as_millis() as u64, Ordering::SeqCst);
}

async fn probe_stand(namespaces: &Api<Namespace>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    namespaces.get("default").await?;
    tokio::time::sleep(SLEEP).await;
    Ok(started.elapsed().saturating_sub(SLEEP))
}

/// Measures the stand and sets the slack; returns it and the slowest probe.
pub async fn calibrate(client: &kube::Client) -> anyhow::Result<(Duration, Duration)> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut slowest = Duration::ZERO;
    for _ in 0..STAND_PROBES {
        slowest = slowest.max(probe_stand(&namespaces).await?);
    }
    Ok((set_start_slack(slowest), slowest))
}

/// Probes the stand once a second until aborted. A failed read counts as slow as its time to
/// fail.
pub fn keep_probing(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let namespaces: Api<Namespace> = Api::all(client);
        loop {
            let started = Instant::now();
            let cost = probe_stand(&namespaces)
                .await
                .unwrap_or_else(|_| started.elapsed());
            record(stand(), cost);
            tokio::time::sleep(EVERY).await;
        }
    })
}

/// A suspended AppWrapper (a Pod it never creates, since a workload needs a pod spec): a
/// conforming controller moves it from the empty phase to `Suspended` in one reconcile, and
/// adds no finalizer (spec: the empty phase's handler).
fn probe_appwrapper(name: &str) -> DynamicObject {
    let mut object = DynamicObject::new(name, &objects::appwrapper_resource());
    object.metadata.labels = Some([(PROBE_LABEL.to_string(), "true".to_string())].into());
    object.data = json!({
        "spec": {
            "suspend": true,
            "components": [{"template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "latency-probe"},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "probe", "image": "busybox"}],
                },
            }}],
        }
    });
    object
}

/// One reaction of the controller: from the create of a suspended AppWrapper to its phase
/// `Suspended`; `None` when it did not come within [`GIVE_UP`] or the API failed.
async fn probe_controller(appwrappers: &Api<DynamicObject>, n: u64) -> Option<Duration> {
    let name = format!("awconf-latency-probe-{n}");
    let started = Instant::now();
    if let Err(e) = appwrappers
        .create(&PostParams::default(), &probe_appwrapper(&name))
        .await
    {
        tracing::debug!("latency probe {name} not created: {e}");
        return None;
    }
    let mut reaction = None;
    while started.elapsed() < GIVE_UP {
        match appwrappers.get_opt(&name).await {
            Ok(Some(aw)) if objects::phase_of(&aw.data) == "Suspended" => {
                reaction = Some(started.elapsed());
                break;
            }
            Ok(None) => break,
            _ => tokio::time::sleep(POLL).await,
        }
    }
    if reaction.is_none() {
        tracing::debug!("latency probe {name}: no reaction within {GIVE_UP:?}");
    }
    let _ = appwrappers.delete(&name, &DeleteParams::background()).await;
    reaction
}

/// Probes the controller under test every two seconds until aborted. Only reactions that no
/// stop or start of the controller overlapped, begun [`SETTLE`] after its last one, count.
pub fn keep_probing_controller(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let appwrappers = objects::appwrappers(&client, NAMESPACE);
        for n in 0.. {
            let interruptions = INTERRUPTIONS.load(Ordering::SeqCst);
            let began = epoch().elapsed().as_millis() as u64;
            let settled =
                began >= INTERRUPTED_MS.load(Ordering::SeqCst) + SETTLE.as_millis() as u64;
            let reaction = probe_controller(&appwrappers, n).await;
            let undisturbed = INTERRUPTIONS.load(Ordering::SeqCst) == interruptions;
            if let Some(reaction) = reaction.filter(|_| settled && undisturbed) {
                record(reactions(), reaction);
                SLOWEST_REACTION_MS.fetch_max(reaction.as_millis() as u64, Ordering::Relaxed);
            }
            tokio::time::sleep(CONTROLLER_EVERY).await;
        }
    })
}

/// Deletes the probes' AppWrappers that an aborted probe left behind.
pub async fn remove_controller_probes(client: &kube::Client) {
    let appwrappers = objects::appwrappers(client, NAMESPACE);
    let _ = appwrappers
        .delete_collection(
            &DeleteParams::background(),
            &kube::api::ListParams::default().labels(PROBE_LABEL),
        )
        .await;
}
