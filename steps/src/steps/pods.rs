//! Steering the pods of a running AppWrapper, as the fake nodes would see them.

use super::outcome::Outcome;
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use cucumber::when;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
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
                node_of(p).unwrap_or("-")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How long a node may take to start a pod bound to it before it counts as slow. KWOK starts
/// one in under 2 s on a loaded two-core machine, a kubelet with a loaded image in about as
/// much; the waits that time out take 30 s and more.
pub const SLOW_NODE_START: Duration = Duration::from_secs(5);

/// Why `count` Running pods are missing because their node did not start them, if so: enough
/// pods are Running or bound to a node and still Pending (none told to stay Pending or start
/// late), and one of them stayed Pending on its node for [`SLOW_NODE_START`] or more, up to
/// `now` or its deletion. The controller's part ends when the scheduler binds its pod;
/// starting it is the node's (KWOK's fake kubelet, or a real one), and a controller may
/// rightly reset a workload whose pods its node never started. A pod that is never bound (a
/// wrong node selector, a missing toleration), or one deleted soon after its binding, is not
/// the node's doing.
pub fn not_started_by_node(pods: &[Pod], count: usize, now: Timestamp) -> Option<String> {
    let running = pods
        .iter()
        .filter(|p| pod_phase(p) == "Running" && p.metadata.deletion_timestamp.is_none())
        .count();
    let unstarted: Vec<(&Pod, Duration)> = pods
        .iter()
        .filter(|p| pod_phase(p) == "Pending" && !steered_to_wait(p))
        .filter_map(|p| Some((p, pending_on_node(p, now)?)))
        .collect();
    let slow: Vec<String> = unstarted
        .iter()
        .filter(|(_, pending)| *pending >= SLOW_NODE_START)
        .map(|(p, pending)| {
            format!(
                "{} on {} for {}s",
                p.metadata.name.as_deref().unwrap_or_default(),
                node_of(p).unwrap_or_default(),
                pending.as_secs()
            )
        })
        .collect();
    if slow.is_empty() || running + unstarted.len() < count {
        return None;
    }
    Some(format!(
        "the node did not start a pod bound to it (still Pending: {}), which is the stand's \
         kubelet being slow, not the controller",
        slow.join(", ")
    ))
}

/// How long a bound pod has been Pending on its node: from its binding (its PodScheduled
/// condition) to the start of its deletion, or to `now`.
fn pending_on_node(pod: &Pod, now: Timestamp) -> Option<Duration> {
    node_of(pod)?;
    let bound = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "True")?
        .last_transition_time
        .as_ref()?
        .0;
    // A deletion timestamp is when the grace period ends; the deletion began that much before.
    let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
    let until = pod
        .metadata
        .deletion_timestamp
        .as_ref()
        .map_or(now.as_millisecond(), |t| {
            t.0.as_millisecond() - grace * 1000
        });
    let millis = until - bound.as_millisecond();
    Some(Duration::from_millis(millis.max(0).unsigned_abs()))
}

/// The node a pod is bound to, once it is.
fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
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

    /// Seconds past a fixed moment.
    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    /// A pod in `phase`, bound at second `bound` if any, with `labels`, deleted at second
    /// `deleted` if any.
    fn pod(phase: &str, bound: Option<i64>, labels: Value, deleted: Option<i64>) -> Pod {
        const GRACE: i64 = 30;
        let conditions = bound.map_or(json!([]), |s| {
            json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": at(s).to_string()}])
        });
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("p-{phase}"),
                "labels": labels,
                "deletionTimestamp": deleted.map(|s| at(s + GRACE).to_string()),
                "deletionGracePeriodSeconds": deleted.map(|_| GRACE),
            },
            "spec": {"containers": [], "nodeName": bound.map(|_| "kwok-node-0")},
            "status": {"phase": phase, "conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn only_pods_their_node_left_pending_are_the_nodes_doing() {
        let now = at(40);
        let none = json!({});
        let bound = pod("Pending", Some(2), none.clone(), None);
        let just_bound = pod("Pending", Some(37), none.clone(), None);
        let unbound = pod("Pending", None, none.clone(), None);
        let running = pod("Running", Some(2), none.clone(), None);
        let held = pod("Pending", Some(2), json!({OUTCOME_LABEL: "pending"}), None);
        // Reset by the controller after its node left it Pending 30 s, or at once.
        let reset_late = pod("Pending", Some(2), none.clone(), Some(32));
        let reset_early = pod("Pending", Some(2), none.clone(), Some(3));
        // (pods, Running pods wanted) → the node's doing
        let table: &[(&[&Pod], usize, bool)] = &[
            (&[&bound], 1, true),
            (&[&running, &bound], 2, true),
            (&[&reset_late], 1, true),
            (&[&bound], 2, false),
            (&[&just_bound], 1, false),
            (&[&unbound], 1, false),
            (&[&running], 1, false),
            (&[&held], 1, false),
            (&[&reset_early], 1, false),
            (&[], 1, false),
        ];
        for (pods, count, nodes) in table {
            let pods: Vec<Pod> = pods.iter().map(|p| (*p).clone()).collect();
            let why = not_started_by_node(&pods, *count, now);
            assert_eq!(why.is_some(), *nodes, "{pods:?} {count}: {why:?}");
        }
        let why = not_started_by_node(&[bound], 1, now).unwrap();
        assert!(why.contains("p-Pending on kwok-node-0 for 38s"), "{why}");
    }
}
