//! The Autopilot node monitor's view of one Node (§3.10 A). The NoExecute table is what the
//! pod summary reads (see `observe::no_execute_resources`, computed from the node watch); the
//! NoSchedule table is kept by the reference but read by nothing, and is provided here as a
//! pure function for parity.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::ResourceExt;

use crate::config::AutopilotConfig;
use crate::quantity::parse_quantity;

pub use crate::observe::no_execute_resources;

const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// Whether the node takes no work at all: cordoned, unreachable or not ready.
pub fn unusable(node: &Node) -> bool {
    let spec = node.spec.as_ref();
    spec.and_then(|s| s.unschedulable).unwrap_or(false)
        || spec.and_then(|s| s.taints.as_ref()).is_some_and(|ts| {
            ts.iter()
                .any(|t| t.key == UNREACHABLE || t.key == NOT_READY)
        })
}

/// The node's `noScheduleNodes` entry: its whole capacity but `pods` when it is unusable,
/// otherwise the non-zero capacity of every resource with a NoExecute or NoSchedule label.
pub fn no_schedule_resources(
    node: &Node,
    autopilot: &AutopilotConfig,
) -> BTreeMap<String, Quantity> {
    if node.metadata.deletion_timestamp.is_some() {
        return BTreeMap::new();
    }
    let capacity = node
        .status
        .as_ref()
        .and_then(|s| s.capacity.clone())
        .unwrap_or_default();
    if unusable(node) {
        return capacity.into_iter().filter(|(r, _)| r != "pods").collect();
    }
    let labels = node.labels();
    let flagged: BTreeSet<&String> = autopilot
        .resource_taints
        .iter()
        .filter(|(_, taints)| {
            taints.iter().any(|t| {
                matches!(t.effect.as_str(), "NoExecute" | "NoSchedule")
                    && labels.get(&t.key).is_some_and(|v| *v == t.value)
            })
        })
        .map(|(resource, _)| resource)
        .collect();
    capacity
        .into_iter()
        .filter(|(r, q)| flagged.contains(r) && parse_quantity(&q.0).is_ok_and(|q| !q.is_zero()))
        .collect()
}

/// Each node's NoExecute resources as last seen, to tell when a node newly turns unhealthy:
/// then the AppWrappers with pods on it are looked at at once, not at their next re-examination.
#[derive(Default)]
pub struct NoExecuteWatch {
    seen: HashMap<String, BTreeSet<String>>,
}

impl NoExecuteWatch {
    /// Records the node's NoExecute resources; whether one of them is new since the last look.
    pub fn newly_unhealthy(&mut self, node: &Node, autopilot: &AutopilotConfig) -> bool {
        let now = no_execute_resources(node, autopilot);
        let before = self.seen.remove(&node.name_any()).unwrap_or_default();
        let grew = now.iter().any(|r| !before.contains(r));
        if !now.is_empty() {
            self.seen.insert(node.name_any(), now);
        }
        grew
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const GPU: &str = "nvidia.com/gpu";

    fn node(labels: serde_json::Value, taints: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n", "labels": labels},
            "spec": {"taints": taints},
            "status": {"capacity": {GPU: "4", "cpu": "8", "pods": "110"}},
        }))
        .unwrap()
    }

    fn gpu(node: &Node) -> (BTreeSet<String>, Vec<String>) {
        let autopilot = AutopilotConfig::default();
        (
            no_execute_resources(node, &autopilot),
            no_schedule_resources(node, &autopilot)
                .into_keys()
                .collect(),
        )
    }

    #[test]
    fn autopilot_monitoring_follows_labels_and_unreachable_taints() {
        let healthy = node(json!({}), json!([]));
        assert_eq!(gpu(&healthy), (BTreeSet::new(), vec![]));

        let evict = node(json!({"autopilot.ibm.com/gpuhealth": "EVICT"}), json!([]));
        assert_eq!(
            gpu(&evict),
            (BTreeSet::from([GPU.to_owned()]), vec![GPU.to_owned()])
        );

        let testing = node(json!({"autopilot.ibm.com/gpuhealth": "TESTING"}), json!([]));
        assert_eq!(gpu(&testing), (BTreeSet::new(), vec![GPU.to_owned()]));

        let warn = node(json!({"autopilot.ibm.com/gpuhealth": "WARN"}), json!([]));
        assert_eq!(gpu(&warn), (BTreeSet::new(), vec![]));

        for key in [UNREACHABLE, NOT_READY] {
            let down = node(json!({}), json!([{"key": key, "effect": "NoSchedule"}]));
            let (no_execute, no_schedule) = gpu(&down);
            assert!(no_execute.is_empty());
            assert_eq!(no_schedule, ["cpu", GPU], "{key}: whole capacity but pods");
        }
    }

    #[test]
    fn a_node_being_deleted_has_no_entries() {
        let mut evict = node(json!({"autopilot.ibm.com/gpuhealth": "EVICT"}), json!([]));
        evict.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        assert_eq!(gpu(&evict), (BTreeSet::new(), vec![]));
    }

    #[test]
    fn a_node_is_newly_unhealthy_only_when_a_noexecute_resource_appears() {
        let autopilot = AutopilotConfig::default();
        let healthy = node(json!({}), json!([]));
        let evict = node(json!({"autopilot.ibm.com/gpuhealth": "EVICT"}), json!([]));
        let testing = node(json!({"autopilot.ibm.com/gpuhealth": "TESTING"}), json!([]));
        let mut watch = NoExecuteWatch::default();
        let seen: Vec<bool> = [
            &healthy, &evict, &evict, &testing, &evict, &healthy, &healthy,
        ]
        .into_iter()
        .map(|n| watch.newly_unhealthy(n, &autopilot))
        .collect();
        assert_eq!(seen, [false, true, false, false, true, false, false]);
    }
}
