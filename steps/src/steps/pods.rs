//! Steering the pods of a running AppWrapper, as the fake nodes would see them.

use super::outcome::Outcome;
use std::collections::BTreeMap;

use anyhow::Context as _;
use cucumber::when;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

use super::secs;
use crate::fixtures::{HOLD_FINALIZER, PodSteer};
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
