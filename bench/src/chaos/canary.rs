//! When the cluster runs pods again after a restart of its API server or etcd. `/readyz` says
//! the API server answers, but the scheduler's and KWOK's watches may take a while longer to
//! list again (client-go backs off up to 30 s, jittered), and until then no pod is scheduled or
//! started: for the workloads deployed meanwhile the outage goes on. A pod of no workload, in
//! `kube-system` (Kueue leaves that namespace alone), measures it.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

const NAMESPACE: &str = "kube-system";
const POLL: Duration = Duration::from_millis(250);

/// The canary pod's manifest: any fake node may run it, and nothing needs its image.
pub fn manifest(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"awconf.dev/chaos": "canary"}},
        "spec": {
            "containers": [{"name": "canary", "image": "awconf.dev/canary:none"}],
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0
        }
    })
}

/// Whether `pod` runs: scheduled, and started by its node.
pub fn runs(pod: &Pod) -> bool {
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some();
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    scheduled && phase == Some("Running")
}

/// Creates the canary `name`, waits until it runs, and deletes it; returns how long it took
/// to run. Errors while the API server still recovers are tried again until `within`.
pub async fn runs_pods_again(
    client: &kube::Client,
    name: &str,
    within: Duration,
) -> anyhow::Result<Duration> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let pod: Pod = serde_json::from_value(manifest(name))?;
    let started = Instant::now();
    let deadline = started + within;
    let mut last = String::from("not created yet");
    let mut created = false;
    while Instant::now() < deadline {
        if !created {
            match pods.create(&PostParams::default(), &pod).await {
                Ok(_) => created = true,
                Err(kube::Error::Api(e)) if e.code == 409 => created = true,
                Err(e) => last = format!("creating it: {e}"),
            }
        }
        if created {
            match pods.get_opt(name).await {
                Ok(Some(found)) if runs(&found) => {
                    let took = started.elapsed();
                    let _ = pods
                        .delete(name, &DeleteParams::default().grace_period(0))
                        .await;
                    return Ok(took);
                }
                Ok(Some(found)) => {
                    last = format!(
                        "node {:?}, phase {:?}",
                        found.spec.and_then(|s| s.node_name),
                        found.status.and_then(|s| s.phase)
                    );
                }
                Ok(None) => created = false,
                Err(e) => last = format!("reading it: {e}"),
            }
        }
        tokio::time::sleep(POLL).await;
    }
    let _ = pods
        .delete(name, &DeleteParams::default().grace_period(0))
        .await;
    anyhow::bail!(
        "the canary pod {NAMESPACE}/{name} did not run within {}s (last: {last})",
        within.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(node: Option<&str>, phase: Option<&str>) -> Pod {
        let mut value = manifest("c");
        if let Some(node) = node {
            value["spec"]["nodeName"] = json!(node);
        }
        if let Some(phase) = phase {
            value["status"] = json!({"phase": phase});
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_canary_runs_once_scheduled_and_started() {
        assert!(!runs(&pod(None, None)));
        assert!(!runs(&pod(None, Some("Pending"))));
        assert!(!runs(&pod(Some("kwok-node-0"), Some("Pending"))));
        assert!(runs(&pod(Some("kwok-node-0"), Some("Running"))));
    }

    #[test]
    fn the_canary_belongs_to_no_workload_and_fits_any_fake_node() {
        let value = manifest("awconf-canary-3");
        assert_eq!(value["metadata"]["namespace"], NAMESPACE);
        assert_eq!(value["spec"]["tolerations"][0]["operator"], "Exists");
        assert!(
            value["metadata"]["labels"]
                .get("kueue.x-k8s.io/queue-name")
                .is_none()
        );
        let _: Pod = serde_json::from_value(value).unwrap();
    }
}
