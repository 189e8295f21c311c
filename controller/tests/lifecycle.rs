//! The embedded controller beside the real Kueue on the embedded cluster: the lifecycle of a
//! wrapped Job, retries of a failing pod, and deletion that cleans up before the finalizer goes.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use appwrapper_controller::api::{AppWrapper, Phase};
use appwrapper_controller::config::Config;
use appwrapper_controller::duration::GoDuration;
use clusters::Cluster;
use clusters::testing::eventually;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

/// One controller for this test process, on a runtime of its own that outlives every test.
fn controller() {
    static STARTED: OnceLock<Result<(), String>> = OnceLock::new();
    let started = STARTED.get_or_init(|| {
        let (cluster, _) = clusters::shared_kueue::shared(&clusters::kueue::default_source()?)?;
        clusters::testing::keep_running(move || async move {
            let mut config = Config::default();
            config.appwrapper.fault_tolerance.admission_grace_period =
                GoDuration::from_std(Duration::from_secs(60));
            appwrapper_controller::control_loop::run(config, cluster.client().await?).await
        })
    });
    started.as_ref().expect("the embedded controller started");
}

/// A namespace with a LocalQueue `queue` on a ClusterQueue of its own.
async fn setup(ns: &str) -> kube::Client {
    controller();
    let (cluster, _) =
        clusters::shared_kueue::shared(&clusters::kueue::default_source().unwrap()).unwrap();
    let client = cluster.client().await.unwrap();
    clusters::testing::namespace(&client, ns).await;
    use clusters::kueue::objects;
    objects::apply(&client, &objects::resource_flavor("lifecycle-flavor"))
        .await
        .unwrap();
    let spec = objects::ClusterQueueSpec {
        flavor: "lifecycle-flavor".into(),
        ..Default::default()
    };
    objects::namespace_queue(&client, ns, &spec).await.unwrap();
    client
}

/// Every phase the AppWrapper passes through, in order, from a watch.
fn record_phases(api: Api<AppWrapper>, name: &str) -> Arc<Mutex<Vec<Phase>>> {
    let phases = Arc::new(Mutex::new(Vec::<Phase>::new()));
    let sink = phases.clone();
    let name = name.to_string();
    tokio::spawn(async move {
        let mut stream = watcher::watch_object(api, &name).boxed();
        while let Some(event) = stream.next().await {
            let Ok(Some(aw)) = event else { continue };
            let phase = aw.status.map(|s| s.phase).unwrap_or_default();
            let mut seen = sink.lock().unwrap();
            if seen.last() != Some(&phase) {
                seen.push(phase);
            }
        }
    });
    phases
}

/// The phases recorded once the watch has caught up with `last`, which a read already saw:
/// the watch may deliver it a moment after the read.
async fn seen_up_to(phases: &Mutex<Vec<Phase>>, last: Phase) -> Vec<Phase> {
    eventually(30, "the watch to see the last phase", || async {
        let seen = phases.lock().unwrap().clone();
        (seen.last() == Some(&last)).then_some(())
    })
    .await;
    phases.lock().unwrap().clone()
}

fn appwrapper(
    name: &str,
    annotations: serde_json::Value,
    template: serde_json::Value,
) -> AppWrapper {
    serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "queue"}, "annotations": annotations},
        "spec": {"components": [{"template": template}]},
    }))
    .unwrap()
}

fn job_template(name: &str, outcome: &str) -> serde_json::Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"template": {
               "metadata": {"labels": {"awconf.dev/outcome": outcome}, "annotations": {"awconf.dev/run-duration": "2s"}},
               "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                   "resources": {"requests": {"cpu": "1"}}}]}}}})
}

fn condition(aw: &AppWrapper, kind: &str) -> Option<String> {
    aw.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

async fn labelled_pods(client: &kube::Client, ns: &str, aw: &str) -> usize {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let selector = format!("workload.codeflare.dev/appwrapper={aw}");
    pods.list(&ListParams::default().labels(&selector))
        .await
        .map(|l| l.items.len())
        .unwrap_or(usize::MAX)
}

fn in_order(seen: &[Phase], expected: &[Phase]) -> bool {
    let mut rest = seen.iter();
    expected.iter().all(|want| rest.any(|p| p == want))
}

#[tokio::test]
async fn a_wrapped_job_goes_suspended_resuming_running_succeeded() {
    let ns = "lifecycle-job";
    let client = setup(ns).await;
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let phases = record_phases(aws.clone(), "job");
    aws.create(
        &PostParams::default(),
        &appwrapper("job", json!({}), job_template("job-job", "succeed")),
    )
    .await
    .unwrap();
    eventually(90, "phase Succeeded", || async {
        (aws.get("job").await.ok()?.status?.phase == Phase::Succeeded).then_some(())
    })
    .await;
    let seen = seen_up_to(&phases, Phase::Succeeded).await;
    let expected = [
        Phase::Suspended,
        Phase::Resuming,
        Phase::Running,
        Phase::Succeeded,
    ];
    assert!(in_order(&seen, &expected), "phases seen: {seen:?}");
    let aw = aws.get("job").await.unwrap();
    assert_eq!(condition(&aw, "QuotaReserved").as_deref(), Some("False"));
}

#[tokio::test]
async fn a_failing_pod_is_retried_retry_limit_times_then_fails_leaving_nothing() {
    let ns = "lifecycle-retries";
    let client = setup(ns).await;
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let phases = record_phases(aws.clone(), "fails");
    let annotations = json!({
        "workload.codeflare.dev.appwrapper/retryLimit": "2",
        "workload.codeflare.dev.appwrapper/failureGracePeriodDuration": "1s",
        "workload.codeflare.dev.appwrapper/retryPausePeriodDuration": "1s",
    });
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fails-pod",
        "labels": {"awconf.dev/outcome": "fail"}, "annotations": {"awconf.dev/run-duration": "1s"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": "1"}}}]}});
    aws.create(
        &PostParams::default(),
        &appwrapper("fails", annotations, pod),
    )
    .await
    .unwrap();
    let failed = eventually(120, "phase Failed with the resources gone", || async {
        let aw = aws.get("fails").await.ok()?;
        let done = aw.status.as_ref()?.phase == Phase::Failed
            && condition(&aw, "ResourcesDeployed").as_deref() == Some("False");
        done.then_some(aw)
    })
    .await;
    let status = failed.status.as_ref().unwrap();
    assert_eq!(status.resetting_count, 2);
    assert_eq!(
        condition(&failed, "QuotaReserved").as_deref(),
        Some("False")
    );
    assert_eq!(
        labelled_pods(&client, ns, "fails").await,
        0,
        "no pod may remain once ResourcesDeployed is False"
    );
    let seen = seen_up_to(&phases, Phase::Failed).await;
    assert_eq!(
        seen.iter().filter(|p| **p == Phase::Resetting).count(),
        2,
        "phases seen: {seen:?}"
    );
    assert_eq!(seen.last(), Some(&Phase::Failed));
}

#[tokio::test]
async fn deleting_a_running_appwrapper_removes_its_resources_before_the_finalizer_goes() {
    let ns = "lifecycle-delete";
    let client = setup(ns).await;
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    aws.create(
        &PostParams::default(),
        &appwrapper("doomed", json!({}), job_template("doomed-job", "running")),
    )
    .await
    .unwrap();
    eventually(90, "phase Running with a pod up", || async {
        let running = aws.get("doomed").await.ok()?.status?.phase == Phase::Running;
        (running && labelled_pods(&client, ns, "doomed").await == 1).then_some(())
    })
    .await;
    aws.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    eventually(90, "the AppWrapper to be gone", || async {
        aws.get_opt("doomed").await.ok()?.is_none().then_some(())
    })
    .await;
    // Checked at once: had the finalizer gone first, the garbage collector would still be at work.
    assert_eq!(labelled_pods(&client, ns, "doomed").await, 0);
    assert!(jobs.get_opt("doomed-job").await.unwrap().is_none());
}

/// kube-runtime holds its runner until the AppWrapper store has listed; a stop that comes
/// first must not wait for that list, which the stop itself cuts off.
#[tokio::test]
async fn a_controller_stopped_as_soon_as_it_starts_stops() {
    let (cluster, _) =
        clusters::shared_kueue::shared(&clusters::kueue::default_source().unwrap()).unwrap();
    let client = cluster.client().await.unwrap();
    for _ in 0..3 {
        // A selector nothing matches keeps it away from the other tests' AppWrappers.
        let handle = appwrapper_controller::control_loop::run_selected(
            Config::default(),
            client.clone(),
            Arc::default(),
            Some("awconf.test/nobody=none".into()),
        )
        .await
        .unwrap();
        tokio::time::timeout(Duration::from_secs(20), handle.shutdown())
            .await
            .expect("stopped within 20 s")
            .unwrap();
    }
}
