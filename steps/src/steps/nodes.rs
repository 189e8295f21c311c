//! Faults on the fake nodes: Autopilot health labels, NoExecute taints, NotReady. Each is undone
//! when the scenario ends. A scenario that breaks a node gives its pods a node of their own,
//! so that it runs beside the others without breaking theirs.

use super::outcome::Outcome;
use anyhow::Context as _;
use cucumber::{given, then, when};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::patience;
use super::pods::{describe, running_pods};
use crate::parameters::{Gpus, Label, Quoted, Subject, Whose, Within};
use crate::wait::{self, Check};
use crate::world::{AwWorld, Undo};
use objects::pod_phase;

/// The node of the AppWrapper's first running pod; remembered as "that node".
async fn node_of(w: &mut AwWorld, subject: &Subject) -> anyhow::Result<String> {
    let name = w.select(subject)?;
    let pods = running_pods(w, &name).await?;
    let node = pods
        .iter()
        .find_map(|p| p.spec.as_ref()?.node_name.clone())
        .context("the running pod is not bound to a node")?;
    w.last_node = Some(node.clone());
    Ok(node)
}

/// The label and the taint that keep a scenario's own node to its own pods.
const OWN_NODE_KEY: &str = "awconf.dev/own-node";

#[given(expr = "{subject} has a node of its own{gpus}")]
async fn node_of_their_own(w: &mut AwWorld, subject: Subject, gpus: Gpus) -> Outcome {
    let name = w.select(&subject)?;
    let node = format!("own-{}", w.ns);
    let gpus = if gpus.is_empty() { 0 } else { gpus.parse()? };
    let shape = clusters::nodes::NodeShape {
        tainted: true,
        ..clusters::nodes::NodeShape::gpu(gpus)
    };
    let mut manifest = clusters::nodes::fake_node(&node, &shape)?;
    manifest
        .metadata
        .labels
        .get_or_insert_default()
        .insert(OWN_NODE_KEY.into(), w.ns.clone());
    if let Some(spec) = manifest.spec.as_mut() {
        spec.taints.get_or_insert_default().push(Taint {
            key: OWN_NODE_KEY.into(),
            value: Some(w.ns.clone()),
            effect: "NoSchedule".into(),
            time_added: None,
        });
    }
    let nodes = Api::<Node>::all(w.client.clone());
    nodes
        .create(&Default::default(), &manifest)
        .await
        .with_context(|| format!("creating node {node}"))?;
    w.own_cluster_objects
        .push((kube::api::ApiResource::erase::<Node>(&()), node.clone()));
    let aw = w
        .drafts
        .get_mut(&name)
        .with_context(|| format!("AppWrapper {name} is already submitted"))?;
    let own =
        json!({ "key": OWN_NODE_KEY, "operator": "Equal", "value": w.ns, "effect": "NoSchedule" });
    super::appwrapper::place_pods(aw, (OWN_NODE_KEY, &w.ns), &own);
    let node_ref = node.as_str();
    let nodes = &nodes;
    wait::eventually(
        std::time::Duration::from_secs(30),
        &format!("node {node} to be Ready"),
        move || async move {
            let n = nodes.get(node_ref).await?;
            Ok(if clusters::nodes::is_ready(&n) {
                Check::Done(())
            } else {
                Check::NotYet("not Ready".to_string())
            })
        },
    )
    .await?;
    w.note(format!("made node {node} for the pods of {name} alone"));
    Ok(())
}

#[when(expr = "the node of {whose} pod is labelled {label}")]
async fn labelled(w: &mut AwWorld, subject: Whose, label: Label) -> Outcome {
    let Label { key, value } = label;
    let node = node_of(w, &subject).await?;
    Api::<Node>::all(w.client.clone())
        .patch(
            &node,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {&key: &value}}})),
        )
        .await
        .with_context(|| format!("labelling node {node}"))?;
    w.undo.push(Undo::NodeLabel {
        node: node.clone(),
        key: key.clone(),
    });
    w.note(format!("labelled node {node} {key}={value}"));
    Ok(())
}

#[when(expr = "the node of {whose} pod gets a NoExecute taint {quoted}")]
async fn tainted(w: &mut AwWorld, subject: Whose, key: Quoted) -> Outcome {
    let node = node_of(w, &subject).await?;
    let taint = Taint {
        key: key.to_string(),
        effect: "NoExecute".into(),
        value: Some("awconf".into()),
        time_added: None,
    };
    clusters::nodes::taint(&w.client, &node, taint).await?;
    w.undo.push(Undo::NodeTaint {
        node: node.clone(),
        key: key.to_string(),
    });
    w.note(format!("tainted node {node} {key}:NoExecute"));
    Ok(())
}

#[when(expr = "the node of {whose} pod becomes NotReady")]
async fn not_ready(w: &mut AwWorld, subject: Whose) -> Outcome {
    let node = node_of(w, &subject).await?;
    clusters::nodes::make_not_ready(&w.client, &node).await?;
    w.undo.push(Undo::NodeNotReady { node: node.clone() });
    w.note(format!("made node {node} NotReady"));
    Ok(())
}

#[then(expr = "{whose} pods run on another node{within}")]
async fn another_node(w: &mut AwWorld, subject: Whose, seconds: Within) -> Outcome {
    let name = w.select(&subject)?;
    let avoid = w.last_node.clone().context("no node was named before")?;
    let (client, ns, aw, avoid) = (&w.client, w.ns.as_str(), name.as_str(), avoid.as_str());
    Ok(wait::expect(
        patience(&seconds)?,
        &format!("the pods of {name} to run on a node other than {avoid}"),
        move || async move {
            let pods = objects::pods_of(client, ns, aw).await?;
            let live: Vec<_> = pods
                .iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .collect();
            let ok = !live.is_empty()
                && live.iter().all(|p| {
                    pod_phase(p) == "Running"
                        && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(avoid)
                });
            Ok(if ok {
                Check::Done(())
            } else {
                Check::NotYet(describe(&pods))
            })
        },
    )
    .await?)
}
