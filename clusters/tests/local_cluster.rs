//! The embedded cluster is a real cluster: Jobs run, the garbage collector collects, the
//! scheduler refuses what does not fit, and nothing outlives the test process.

mod support;

use std::time::{Duration, Instant};

use clusters::providers::local::{self, LocalCluster};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams, PropagationPolicy};
use serde_json::json;
use support::{eventually, namespace};

fn pod(name: &str, labels: serde_json::Value, annotations: serde_json::Value, gpus: u32) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"containers": [
            {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": gpus}}},
            {"name": "side", "image": "busybox"},
        ]},
    }))
    .unwrap()
}

async fn pods_with(api: &Api<Pod>, selector: &str) -> Vec<Pod> {
    api.list(&ListParams::default().labels(selector))
        .await
        .expect("list pods")
        .items
}

#[tokio::test]
async fn a_job_with_three_completions_succeeds_on_fake_nodes() {
    let cluster = local::shared().unwrap();
    let client = namespace(cluster, "job-succeeds").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "job-succeeds");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "three"},
        "spec": {"completions": 3, "parallelism": 3, "template": {
            "metadata": {"labels": {"app": "three"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    eventually(60, "the Job to complete", || async {
        let job = jobs.get("three").await.ok()?;
        let status = job.status?;
        let complete = status
            .conditions?
            .iter()
            .any(|c| c.type_ == "Complete" && c.status == "True");
        (complete && status.succeeded == Some(3)).then_some(())
    })
    .await;
    let pods = pods_with(&Api::namespaced(client, "job-succeeds"), "app=three").await;
    assert!(pods.len() >= 3);
    for pod in pods
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"))
    {
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default();
        assert!(
            node.starts_with(clusters::nodes::NODE_PREFIX),
            "pod bound to {node:?}"
        );
    }
}

#[tokio::test]
async fn deleting_a_job_in_background_removes_its_pods() {
    let cluster = local::shared().unwrap();
    let client = namespace(cluster, "job-gc").await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "job-gc");
    let pods: Api<Pod> = Api::namespaced(client, "job-gc");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "lingers"},
        "spec": {"parallelism": 2, "completions": 2, "template": {
            "metadata": {"labels": {"app": "lingers", "awconf.dev/outcome": "running"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    eventually(60, "two running pods", || async {
        let running = pods_with(&pods, "app=lingers")
            .await
            .into_iter()
            .filter(|p| phase(p) == "Running")
            .count();
        (running == 2).then_some(())
    })
    .await;
    let background = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    jobs.delete("lingers", &background).await.unwrap();
    eventually(60, "the garbage collector to remove the pods", || async {
        pods_with(&pods, "app=lingers")
            .await
            .is_empty()
            .then_some(())
    })
    .await;
}

fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_pod_labelled_to_fail_ends_failed_with_the_requested_exit_code() {
    let cluster = local::shared().unwrap();
    let client = namespace(cluster, "pod-fails").await;
    let pods: Api<Pod> = Api::namespaced(client, "pod-fails");
    let failing = pod(
        "fails",
        json!({"awconf.dev/outcome": "fail"}),
        json!({"awconf.dev/exit-code": "42", "awconf.dev/container": "main"}),
        0,
    );
    pods.create(&PostParams::default(), &failing).await.unwrap();
    let statuses = eventually(60, "the pod to fail", || async {
        let pod = pods.get("fails").await.ok()?;
        (phase(&pod) == "Failed").then(|| pod.status?.container_statuses)?
    })
    .await;
    let exit = |name: &str| {
        statuses
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.state.as_ref()?.terminated.as_ref())
            .map(|t| t.exit_code)
    };
    assert_eq!(exit("main"), Some(42));
    assert_eq!(exit("side"), Some(0));
}

#[tokio::test]
async fn a_pod_that_hangs_on_delete_stays_terminating_until_deleted_with_grace_zero() {
    let cluster = local::shared().unwrap();
    let client = namespace(cluster, "pod-hangs").await;
    let pods: Api<Pod> = Api::namespaced(client, "pod-hangs");
    pods.create(
        &PostParams::default(),
        &pod(
            "hangs",
            json!({"awconf.dev/hang-on-delete": "true"}),
            json!({}),
            0,
        ),
    )
    .await
    .unwrap();
    eventually(60, "the pod to run", || async {
        (phase(&pods.get("hangs").await.ok()?) == "Running").then_some(())
    })
    .await;
    pods.delete("hangs", &DeleteParams::default())
        .await
        .unwrap();
    // It must still be there, marked for deletion, well after kwok would have removed a normal pod.
    let observed_until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < observed_until {
        let pod = pods
            .get("hangs")
            .await
            .expect("a hanging pod must not disappear");
        assert!(pod.metadata.deletion_timestamp.is_some());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    pods.delete(
        "hangs",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    eventually(30, "the force-deleted pod to be gone", || async {
        pods.get_opt("hangs").await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_pod_asking_for_more_gpus_than_any_node_has_stays_pending_unschedulable() {
    let cluster = local::shared().unwrap();
    let client = namespace(cluster, "too-many-gpus").await;
    let pods: Api<Pod> = Api::namespaced(client, "too-many-gpus");
    pods.create(
        &PostParams::default(),
        &pod("greedy", json!({}), json!({}), 1000),
    )
    .await
    .unwrap();
    eventually(60, "PodScheduled=False/Unschedulable", || async {
        let pod = pods.get("greedy").await.ok()?;
        let unschedulable = pod.status.as_ref()?.conditions.as_ref()?.iter().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        });
        (unschedulable && phase(&pod) == "Pending").then_some(())
    })
    .await;
}

const CRASH_HELPER: &str = "AWCONF_CRASH_HELPER_PIDS";

/// Run only as a child of `no_component_outlives_a_failing_test_process`: brings up a cluster,
/// records its pids and fails.
#[tokio::test]
async fn crash_helper_brings_up_a_cluster_and_fails() {
    let Ok(pid_file) = std::env::var(CRASH_HELPER) else {
        return;
    };
    let cluster = LocalCluster::up(local::LocalOptions {
        nodes: 1,
        ..Default::default()
    })
    .await
    .unwrap();
    let pids: Vec<String> = cluster
        .pids()
        .iter()
        .map(|(_, pid)| pid.to_string())
        .collect();
    std::fs::write(pid_file, pids.join("\n")).unwrap();
    std::mem::forget(cluster); // no orderly teardown: only the kernel can clean up now
    panic!("failing on purpose with a cluster up");
}

#[tokio::test]
async fn no_component_outlives_a_failing_test_process() {
    let pid_file = std::env::temp_dir().join(format!("awconf-crash-pids-{}", std::process::id()));
    // Captured, so the helper's deliberate failure does not read as this run's result.
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_helper_brings_up_a_cluster_and_fails",
            "--nocapture",
        ])
        .env(CRASH_HELPER, &pid_file)
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "the helper test was meant to fail:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
        .expect("the helper wrote its pids")
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(
        pids.len(),
        5,
        "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok"
    );
    eventually(
        10,
        "every component of the crashed test to be gone",
        || async {
            pids.iter()
                .all(|pid| !clusters::process::is_alive(*pid))
                .then_some(())
        },
    )
    .await;
    let _ = std::fs::remove_file(pid_file);
}

/// Its CA key and admin kubeconfig make whoever reads them cluster admin: on a shared CI
/// runner, nothing the cluster writes may be open to another user.
#[tokio::test]
async fn nothing_the_cluster_writes_is_open_to_other_users() {
    let cluster = local::shared().unwrap();
    let dir = cluster.work_dir();
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let prefix = format!("awconf-{}-", std::process::id());
    assert!(
        name.starts_with(&prefix) && name.len() == prefix.len() + 8,
        "the work directory {name} has a guessable name"
    );
    let open = clusters::owner_only::open_to_others(dir).unwrap();
    assert!(open.is_empty(), "open to other users: {open:#?}");
    for file in ["pki/ca.key", "pki/admin.key", "kubeconfig.yaml"] {
        assert!(dir.join(file).exists(), "{file} was not written");
    }
}

/// etcd and the API server, each SIGKILLed and started again on the same data: the objects
/// are all there, and a client made before the restarts carries on.
#[tokio::test]
async fn etcd_and_the_api_server_restart_in_place_and_keep_every_object() {
    use clusters::providers::local::{ControlPlanePart, LocalOptions};
    use k8s_openapi::api::core::v1::ConfigMap;
    let mut cluster = LocalCluster::up(LocalOptions {
        nodes: 0,
        ..LocalOptions::default()
    })
    .await
    .unwrap();
    let client = clusters::Cluster::client(&cluster).await.unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "kept"}, "data": {"k": "v"}})).unwrap();
    maps.create(&PostParams::default(), &map).await.unwrap();
    for part in [ControlPlanePart::Etcd, ControlPlanePart::ApiServer] {
        let down = Duration::from_millis(500);
        let took = cluster.restart_part(part, down).await.unwrap();
        assert!(took >= down, "{part}: {took:?}");
        eventually(
            30,
            &format!("the ConfigMap after restarting {part}"),
            || async {
                let map = maps.get("kept").await.ok()?;
                (map.data?.get("k")? == "v").then_some(())
            },
        )
        .await;
    }
}
