//! Autopilot node health on the embedded cluster: a GPU pod gets the anti-affinities at
//! creation, and when Autopilot flags its node with the NoExecute health label the AppWrapper
//! is reset without consuming a retry and comes back on a healthy node.

mod ops_support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use appwrapper_controller::api::{AppWrapper, Phase};
use appwrapper_controller::config::AUTOPILOT_GPU_HEALTH_LABEL;
use clusters::Cluster;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use ops_support::*;
use serde_json::json;

/// Removes the health label from a node when dropped, so a failed test leaves no sick node.
struct Flagged {
    node: String,
}

impl Flagged {
    async fn new(client: &kube::Client, node: &str, value: &str) -> Self {
        set_health(client, node, Some(value)).await;
        Flagged {
            node: node.to_owned(),
        }
    }
}

impl Drop for Flagged {
    fn drop(&mut self) {
        let node = self.node.clone();
        // A client belongs to the runtime that made it, and the test's runtime is blocked
        // here: make a runtime and a client of its own.
        let _ = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Runtime::new() else {
                return;
            };
            runtime.block_on(async {
                if let Ok(client) = clusters::providers::local::shared().unwrap().client().await {
                    set_health(&client, &node, None).await;
                }
            });
        })
        .join();
    }
}

async fn set_health(client: &kube::Client, node: &str, value: Option<&str>) {
    let patch = json!({"metadata": {"labels": {AUTOPILOT_GPU_HEALTH_LABEL: value}}});
    let _ = Api::<Node>::all(client.clone())
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
}

fn phase(aw: &AppWrapper) -> Phase {
    aw.status.as_ref().map(|s| s.phase).unwrap_or_default()
}

fn unhealthy_reason(aw: &AppWrapper) -> String {
    let conditions = aw.status.iter().flat_map(|s| s.conditions.iter());
    conditions
        .filter(|c| c.type_ == "Unhealthy" && c.status == "True")
        .map(|c| c.reason.clone())
        .next()
        .unwrap_or_default()
}

/// Every (phase, reason of a true Unhealthy condition) the AppWrapper passes through.
fn record_phases(api: Api<AppWrapper>, name: &str) -> Arc<Mutex<Vec<(Phase, String)>>> {
    let phases = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&phases);
    let name = name.to_owned();
    tokio::spawn(async move {
        let mut stream = watcher::watch_object(api, &name).boxed();
        while let Some(event) = stream.next().await {
            let Ok(Some(aw)) = event else { continue };
            let mut seen = sink.lock().unwrap();
            let now = (phase(&aw), unhealthy_reason(&aw));
            if seen.last() != Some(&now) {
                seen.push(now);
            }
        }
    });
    phases
}

async fn running_pod(pods: &Api<Pod>, aw: &str) -> Option<Pod> {
    let selector = format!("workload.codeflare.dev/appwrapper={aw}");
    let list = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .ok()?;
    list.items.into_iter().find(|p| {
        p.metadata.deletion_timestamp.is_none()
            && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    })
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn not_in(expressions: &serde_json::Value) -> BTreeSet<(String, Vec<String>)> {
    expressions
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["operator"] == "NotIn")
        .map(|e| {
            let values = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            (e["key"].as_str().unwrap_or_default().to_owned(), values)
        })
        .collect()
}

#[tokio::test]
async fn a_noexecute_health_label_on_the_node_resets_the_appwrapper_without_counting_a_retry() {
    controller();
    let cluster = clusters::providers::local::shared().unwrap();
    let client = cluster.client().await.unwrap();
    let ns = "autopilot";
    namespace(&client, ns).await;
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);

    // No queue label and suspend false: the controller runs it without Kueue.
    let aw: AppWrapper = serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": "gpu", "annotations": {
            "workload.codeflare.dev.appwrapper/retryPausePeriodDuration": "1s"}},
        "spec": {"suspend": false, "components": [{"template": {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-worker"},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}]},
    }))
    .unwrap();
    let phases = record_phases(aws.clone(), "gpu");
    aws.create(&PostParams::default(), &aw).await.unwrap();

    let first = eventually(
        60,
        "the AppWrapper Running with its pod running",
        || async {
            let aw = aws.get("gpu").await.ok()?;
            if phase(&aw) != Phase::Running {
                return None;
            }
            running_pod(&pods, "gpu").await
        },
    )
    .await;
    let affinity = serde_json::to_value(&first.spec.as_ref().unwrap().affinity).unwrap();
    let node_affinity = &affinity["nodeAffinity"];
    let terms =
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            .as_array()
            .cloned()
            .unwrap_or_default();
    assert_eq!(terms.len(), 1, "{affinity}");
    assert_eq!(
        not_in(&terms[0]["matchExpressions"]),
        BTreeSet::from([(
            AUTOPILOT_GPU_HEALTH_LABEL.to_owned(),
            vec!["TESTING".to_owned(), "EVICT".to_owned()]
        )]),
        "{affinity}"
    );
    let preferred = &node_affinity["preferredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(preferred["weight"], 50, "{affinity}");
    assert_eq!(
        not_in(&preferred["preference"]["matchExpressions"]),
        BTreeSet::from([(
            AUTOPILOT_GPU_HEALTH_LABEL.to_owned(),
            vec!["WARN".to_owned()]
        )]),
        "{affinity}"
    );

    let sick = node_of(&first);
    let _flagged = Flagged::new(&client, &sick, "EVICT").await;

    // Detection rides on the Running requeue (at most 60 s), as in the reference.
    let moved = eventually(
        150,
        "a reset and a new running pod on a healthy node",
        || async {
            let aw = aws.get("gpu").await.ok()?;
            if phase(&aw) != Phase::Running {
                return None;
            }
            let pod = running_pod(&pods, "gpu").await?;
            (pod.metadata.uid != first.metadata.uid).then_some(pod)
        },
    )
    .await;
    assert_ne!(node_of(&moved), sick, "the new pod avoids the flagged node");

    let seen = phases.lock().unwrap().clone();
    let reset_at = seen
        .iter()
        .position(|(p, reason)| *p == Phase::Resetting && reason == "AutopilotNoExecute");
    assert!(
        reset_at.is_some_and(|i| seen[i + 1..].iter().any(|(p, _)| *p == Phase::Running)),
        "(phase, Unhealthy reason) seen: {seen:?}"
    );
    let status = aws.get("gpu").await.unwrap().status.unwrap_or_default();
    assert_eq!(
        status.resetting_count, 0,
        "Autopilot resets consume no retry"
    );
}
