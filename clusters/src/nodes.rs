//! Fake nodes served by kwok, and the faults a test can inflict on them.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::cluster::ClusterError;
use crate::poll::{self, Look};

pub const NODE_PREFIX: &str = "kwok-node-";
pub const GPU: &str = "nvidia.com/gpu";

/// Marks a node as KWOK's to serve.
pub const KWOK_NODE_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// Capacity of each fake node.
#[derive(Clone, Debug)]
pub struct NodeShape {
    pub cpu: String,
    pub memory: String,
    pub pods: u32,
    pub gpus: u32,
    /// Taint `kwok.x-k8s.io/node=fake:NoSchedule`, so that only pods tolerating it (the
    /// suite's, through its ResourceFlavor) land there. Nodes of a cluster whose other nodes
    /// run system pods (an in-cluster install) are tainted.
    pub tainted: bool,
}

impl NodeShape {
    pub fn gpu(gpus: u32) -> Self {
        Self {
            cpu: "32".into(),
            memory: "256Gi".into(),
            pods: 110,
            gpus,
            tainted: false,
        }
    }

    fn resources(&self) -> BTreeMap<String, Quantity> {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(self.cpu.clone())),
            ("memory".to_string(), Quantity(self.memory.clone())),
            ("pods".to_string(), Quantity(self.pods.to_string())),
            (GPU.to_string(), Quantity(self.gpus.to_string())),
            ("ephemeral-storage".to_string(), Quantity("1Ti".into())),
        ])
    }
}

/// The taint of [`NodeShape::tainted`] nodes, the one KWOK's own documentation uses.
pub const FAKE_NODE_TAINT: (&str, &str, &str) = ("kwok.x-k8s.io/node", "fake", "NoSchedule");

#[derive(Debug, thiserror::Error)]
pub enum FakeNodeError {
    #[error("node manifest: {0}")]
    Manifest(#[source] serde_json::Error),
    #[error(
        "only {ready} of {count} fake nodes became Ready and untainted within {seconds}s; see the kwok and kube-controller-manager logs"
    )]
    NotSchedulable {
        ready: String,
        count: usize,
        seconds: u64,
    },
}

impl From<FakeNodeError> for ClusterError {
    fn from(e: FakeNodeError) -> Self {
        ClusterError::Part(Box::new(e))
    }
}

pub fn node_name(index: usize) -> String {
    format!("{NODE_PREFIX}{index}")
}

pub fn fake_node(name: &str, shape: &NodeShape) -> Result<Node, FakeNodeError> {
    let resources = shape.resources();
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": { KWOK_NODE_ANNOTATION.0: KWOK_NODE_ANNOTATION.1, "node.alpha.kubernetes.io/ttl": "0" },
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "spec": {
            "providerID": format!("kwok://{name}"),
            "taints": if shape.tainted {
                let (key, value, effect) = FAKE_NODE_TAINT;
                json!([{ "key": key, "value": value, "effect": effect }])
            } else {
                json!([])
            },
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "nodeInfo": { "architecture": "amd64", "operatingSystem": "linux" },
        },
    });
    serde_json::from_value(node).map_err(FakeNodeError::Manifest)
}

pub async fn create_fake_nodes(
    client: &kube::Client,
    count: usize,
    shape: &NodeShape,
) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    for index in 0..count {
        nodes
            .create(
                &PostParams::default(),
                &fake_node(&node_name(index), shape)?,
            )
            .await?;
    }
    Ok(())
}

/// Creates the fake nodes that do not exist yet (an install run twice keeps the first's).
pub async fn ensure_fake_nodes(
    client: &kube::Client,
    count: usize,
    shape: &NodeShape,
) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    for index in 0..count {
        match nodes
            .create(
                &PostParams::default(),
                &fake_node(&node_name(index), shape)?,
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// How many nodes the cluster has.
pub async fn count(client: &kube::Client) -> Result<usize, ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    Ok(nodes.list(&ListParams::default()).await?.items.len())
}

/// Waits until `count` nodes are Ready and the not-ready taint added at creation is gone.
pub async fn wait_schedulable(
    client: &kube::Client,
    count: usize,
    timeout: Duration,
) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = &nodes;
    poll::until(
        timeout,
        Duration::from_millis(200),
        move || async move {
            let list = nodes.list(&ListParams::default()).await?;
            let ready = list
                .items
                .iter()
                .filter(|n| is_ready(n) && !has_taint(n, "node.kubernetes.io/not-ready"))
                .count();
            Ok(if ready >= count {
                Look::Ready(())
            } else {
                Look::NotYet(ready.to_string())
            })
        },
        |ready| {
            ClusterError::from(FakeNodeError::NotSchedulable {
                ready,
                count,
                seconds: timeout.as_secs(),
            })
        },
    )
    .await
}

pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn has_taint(node: &Node, key: &str) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == key))
}

/// Adds a taint (for example `NoExecute` or `NoSchedule`) to a node.
pub async fn taint(client: &kube::Client, node: &str, taint: Taint) -> Result<(), ClusterError> {
    edit_taints(client, node, |taints| {
        taints.retain(|t| !(t.key == taint.key && t.effect == taint.effect));
        taints.push(taint);
    })
    .await
}

pub async fn untaint(client: &kube::Client, node: &str, key: &str) -> Result<(), ClusterError> {
    edit_taints(client, node, |taints| taints.retain(|t| t.key != key)).await
}

async fn edit_taints(
    client: &kube::Client,
    node: &str,
    edit: impl FnOnce(&mut Vec<Taint>),
) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let current = nodes.get(node).await?;
    let mut taints: Vec<Taint> = current.spec.and_then(|s| s.taints).unwrap_or_default();
    edit(&mut taints);
    let patch = Patch::Merge(json!({ "spec": { "taints": taints } }));
    nodes.patch(node, &PatchParams::default(), &patch).await?;
    Ok(())
}

/// Makes a node NotReady at once, as if its kubelet stopped answering: kwok lets go of the node
/// and its Ready condition turns False, so the node lifecycle controller taints it.
pub async fn make_not_ready(client: &kube::Client, node: &str) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let release = json!({ "metadata": { "annotations": { KWOK_NODE_ANNOTATION.0: null } } });
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(release))
        .await?;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let status = json!({ "status": { "conditions": [{
        "type": "Ready", "status": "False", "reason": "KubeletNotReady",
        "message": "node made NotReady by awconf", "lastHeartbeatTime": now, "lastTransitionTime": now,
    }] } });
    nodes
        .patch_status(node, &PatchParams::default(), &Patch::Strategic(status))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_nodes_advertise_gpus_and_pods() {
        let node = fake_node("n0", &NodeShape::gpu(4)).unwrap();
        let allocatable = node.status.unwrap().allocatable.unwrap();
        assert_eq!(allocatable[GPU].0, "4");
        assert_eq!(allocatable["pods"].0, "110");
        assert_eq!(
            node.metadata.annotations.unwrap()[KWOK_NODE_ANNOTATION.0],
            KWOK_NODE_ANNOTATION.1
        );
    }
}
