//! Steering the pods of a running AppWrapper, as the fake nodes would see them.

use super::outcome::Outcome;
use std::collections::BTreeMap;

use anyhow::Context as _;
use cucumber::when;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::secs;
use crate::fixtures::{HOLD_FINALIZER, OUTCOME_LABEL, PodSteer, START_DELAY_ANNOTATION};
use crate::parameters::{PodOutcome, Whose};
use crate::wait::{self, Check};
use crate::world::AwWorld;
use objects::pod_phase;

/// The AppWrapper's Running pods, once it has at least one (waits up to 60 s).
pub async fn running_pods(w: &AwWorld, name: &str) -> anyhow::Result<Vec<Pod>> {
    let (client, ns) = (&w.client, w.ns.as_str());
    wait::eventually(
        secs(60),
        &format!("a Running pod of AppWrapper {name}"),
        move || async move {
            let pods = objects::pods_of(client, ns, name).await?;
            let running: Vec<Pod> = pods
                .iter()
                .filter(|p| pod_phase(p) == "Running" && p.metadata.deletion_timestamp.is_none())
                .cloned()
                .collect();
            Ok(if running.is_empty() {
                Check::NotYet(describe(&pods))
            } else {
                Check::Done(running)
            })
        },
    )
    .await
}

pub fn describe(pods: &[Pod]) -> String {
    if pods.is_empty() {
        return "no pods".into();
    }
    pods.iter()
        .map(|p| {
            format!(
                "pod {} {}{} on {}",
                p.metadata.name.as_deref().unwrap_or_default(),
                pod_phase(p),
                if p.metadata.deletion_timestamp.is_some() {
                    " (terminating)"
                } else {
                    ""
                },
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .unwrap_or("-")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why `count` Running pods are missing only because their node has not started them, if so:
/// enough pods are Running or bound to a node and still Pending, none of them told to stay
/// Pending. The controller's part ends when the scheduler binds its pod; starting it is the
/// node's (KWOK's fake kubelet, or a real one), so a wait that times out there says nothing of
/// the controller. An unbound pod (a wrong node selector, a missing toleration) is not this.
pub fn not_started_by_node(pods: &[Pod], count: usize) -> Option<String> {
    let live: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let unstarted: Vec<&Pod> = live
        .iter()
        .copied()
        .filter(|p| {
            pod_phase(p) == "Pending" && p.spec.as_ref().is_some_and(|s| s.node_name.is_some())
        })
        .filter(|p| !steered_to_wait(p))
        .collect();
    let running = live.iter().filter(|p| pod_phase(p) == "Running").count();
    if unstarted.is_empty() || running + unstarted.len() < count {
        return None;
    }
    let names: Vec<String> = unstarted
        .iter()
        .map(|p| {
            format!(
                "{} on {}",
                p.metadata.name.as_deref().unwrap_or_default(),
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .unwrap_or_default()
            )
        })
        .collect();
    Some(format!(
        "the pods were bound to their nodes, which had not started {} (still Pending): the \
         stand's kubelet was slow, not the controller",
        names.join(", ")
    ))
}

/// Whether a scenario told the pod's node to keep it Pending for a while, or for good.
fn steered_to_wait(pod: &Pod) -> bool {
    let meta = &pod.metadata;
    let pending = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(OUTCOME_LABEL))
        .is_some_and(|v| v == "pending");
    let delayed = meta
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(START_DELAY_ANNOTATION));
    pending || delayed
}

/// Patches the labels and annotations that steer a pod's KWOK stages.
async fn steer(w: &AwWorld, pod: &Pod, steer: &PodSteer) -> anyhow::Result<()> {
    let (labels, annotations) = steer.metadata();
    let to_map = |entries: Vec<(&str, Option<String>)>| -> BTreeMap<String, Value> {
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.map_or(Value::Null, Value::String)))
            .collect()
    };
    let patch = json!({"metadata": {"labels": to_map(labels), "annotations": to_map(annotations)}});
    let name = pod.metadata.name.clone().unwrap_or_default();
    Api::<Pod>::namespaced(w.client.clone(), &w.ns)
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("patching pod {name}"))?;
    Ok(())
}

#[when(expr = "{whose} pods {outcome}")]
async fn pods_do(w: &mut AwWorld, subject: Whose, behaviour: PodOutcome) -> Outcome {
    let name = w.select(&subject)?;
    let behaviour: PodSteer = behaviour.parse().map_err(anyhow::Error::msg)?;
    let pods = running_pods(w, &name).await?;
    for pod in &pods {
        steer(w, pod, &behaviour).await?;
    }
    w.note(format!(
        "made {} running pod(s) of {name}: {behaviour:?}",
        pods.len()
    ));
    Ok(())
}

#[when(expr = "one of {whose} pods fails with exit code {int}")]
async fn one_pod_fails(w: &mut AwWorld, subject: Whose, code: i32) -> Outcome {
    let name = w.select(&subject)?;
    let pods = running_pods(w, &name).await?;
    let pod = pods.first().context("no running pod")?;
    steer(
        w,
        pod,
        &PodSteer::Fail {
            exit_code: code,
            after: None,
        },
    )
    .await?;
    w.note(format!(
        "made pod {} of {name} fail with exit code {code}",
        pod.metadata.name.as_deref().unwrap_or_default()
    ));
    Ok(())
}

#[when(expr = "{whose} pods are deleted")]
async fn pods_deleted(w: &mut AwWorld, subject: Whose) -> Outcome {
    let name = w.select(&subject)?;
    let pods = objects::pods_of(&w.client, &w.ns, &name).await?;
    let api = Api::<Pod>::namespaced(w.client.clone(), &w.ns);
    for pod in &pods {
        let pod_name = pod.metadata.name.clone().unwrap_or_default();
        api.delete(&pod_name, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting pod {pod_name}"))?;
    }
    w.note(format!("deleted {} pod(s) of {name}", pods.len()));
    Ok(())
}

/// Removes [`HOLD_FINALIZER`] from those of `pods` that carry it; returns how many did.
pub async fn release(
    client: &kube::Client,
    namespace: &str,
    pods: &[Pod],
) -> anyhow::Result<usize> {
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut released = 0;
    for pod in pods {
        let finalizers = pod.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == HOLD_FINALIZER) {
            continue;
        }
        let kept: Vec<&String> = finalizers.iter().filter(|f| *f != HOLD_FINALIZER).collect();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let patch = json!({"metadata": {"finalizers": kept}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("removing the finalizer {HOLD_FINALIZER} of pod {name}"))?;
        released += 1;
    }
    Ok(released)
}

#[when(expr = "the finalizer of {whose} pods is removed")]
async fn finalizer_removed(w: &mut AwWorld, subject: Whose) -> Outcome {
    let name = w.select(&subject)?;
    let pods = objects::pods_of(&w.client, &w.ns, &name).await?;
    let released = release(&w.client, &w.ns, &pods).await?;
    crate::require!(
        released > 0,
        "no pod of {name} carries the finalizer {HOLD_FINALIZER}:\n{}",
        describe(&pods)
    );
    w.note(format!(
        "removed the finalizer of {released} pod(s) of {name}"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pod in `phase`, bound to `node` if any, with `labels`, deleting if `deleting`.
    fn pod(phase: &str, node: Option<&str>, labels: Value, deleting: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("p-{phase}"),
                "labels": labels,
                "deletionTimestamp": deleting.then_some("2026-12-08T00:00:00Z"),
            },
            "spec": {"containers": [], "nodeName": node},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    #[test]
    fn only_pods_bound_and_not_started_are_the_nodes_doing() {
        let bound = pod("Pending", Some("kwok-node-0"), json!({}), false);
        let unbound = pod("Pending", None, json!({}), false);
        let running = pod("Running", Some("kwok-node-1"), json!({}), false);
        let held = pod(
            "Pending",
            Some("kwok-node-0"),
            json!({OUTCOME_LABEL: "pending"}),
            false,
        );
        let deleting = pod("Pending", Some("kwok-node-0"), json!({}), true);
        // (pods, Running pods wanted) → the node's doing
        let table: &[(&[&Pod], usize, bool)] = &[
            (&[&bound], 1, true),
            (&[&running, &bound], 2, true),
            (&[&bound], 2, false),
            (&[&unbound], 1, false),
            (&[&running], 1, false),
            (&[&held], 1, false),
            (&[&deleting], 1, false),
            (&[], 1, false),
        ];
        for (pods, count, nodes) in table {
            let pods: Vec<Pod> = pods.iter().map(|p| (*p).clone()).collect();
            let why = not_started_by_node(&pods, *count);
            assert_eq!(why.is_some(), *nodes, "{pods:?} {count}: {why:?}");
        }
        let why = not_started_by_node(&[bound], 1).unwrap();
        assert!(why.contains("p-Pending on kwok-node-0"), "{why}");
    }
}
