//! Faults on the fake nodes: Autopilot health labels, NoExecute taints, NotReady. Each is undone
//! when the scenario ends.

use anyhow::Context as _;
use cucumber::{then, when};
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::patience;
use super::pods::{describe, running_pods};
use super::subject::Subject;
use crate::kube_util::{self, pod_phase};
use crate::wait::{self, Check};
use crate::world::{AwWorld, Undo};

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

#[when(
    regex = r#"^the node of (its|the AppWrapper(?: "[^"]+")?'s) pod is labelled "([^"=]+)=([^"]*)"$"#
)]
async fn labelled(
    w: &mut AwWorld,
    subject: Subject,
    key: String,
    value: String,
) -> anyhow::Result<()> {
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

#[when(
    regex = r#"^the node of (its|the AppWrapper(?: "[^"]+")?'s) pod gets a NoExecute taint "([^"]+)"$"#
)]
async fn tainted(w: &mut AwWorld, subject: Subject, key: String) -> anyhow::Result<()> {
    let node = node_of(w, &subject).await?;
    let taint = Taint {
        key: key.clone(),
        effect: "NoExecute".into(),
        value: Some("awconf".into()),
        time_added: None,
    };
    clusters::nodes::taint(&w.client, &node, taint).await?;
    w.undo.push(Undo::NodeTaint {
        node: node.clone(),
        key: key.clone(),
    });
    w.note(format!("tainted node {node} {key}:NoExecute"));
    Ok(())
}

#[when(regex = r#"^the node of (its|the AppWrapper(?: "[^"]+")?'s) pod becomes NotReady$"#)]
async fn not_ready(w: &mut AwWorld, subject: Subject) -> anyhow::Result<()> {
    let node = node_of(w, &subject).await?;
    clusters::nodes::make_not_ready(&w.client, &node).await?;
    w.undo.push(Undo::NodeNotReady { node: node.clone() });
    w.note(format!("made node {node} NotReady"));
    Ok(())
}

#[then(
    regex = r#"^(its|the AppWrapper(?: "[^"]+")?'s) pods run on another node(?: within (\d+ seconds?|(?:the|\d+) detection periods?(?: plus \d+ seconds?)?))?$"#
)]
async fn another_node(w: &mut AwWorld, subject: Subject, seconds: String) -> anyhow::Result<()> {
    let name = w.select(&subject)?;
    let avoid = w.last_node.clone().context("no node was named before")?;
    let (client, ns, aw, avoid) = (&w.client, w.ns.as_str(), name.as_str(), avoid.as_str());
    wait::expect(
        patience(&seconds)?,
        &format!("the pods of {name} to run on a node other than {avoid}"),
        move || async move {
            let pods = kube_util::pods_of(client, ns, aw).await?;
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
    .await
}
