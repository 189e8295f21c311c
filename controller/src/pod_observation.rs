//! A pod as the decisions see it: phase, node, whether it is terminating, the exit codes of
//! its failed containers and the resources it asks for. A leaf: the caches and observe both
//! project pods through it.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::decide::{PodObservation, PodPhase};
use crate::quantity::parse_quantity;

pub fn pod_observation(pod: &Pod) -> PodObservation {
    let status = pod.status.as_ref();
    let phase = match status.and_then(|s| s.phase.as_deref()) {
        Some("Pending") => PodPhase::Pending,
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        _ => PodPhase::Unknown,
    };
    let exit_codes = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.terminated.as_ref())
        .map(|t| t.exit_code)
        .filter(|&code| code != 0)
        .collect();
    let mut resources = BTreeSet::new();
    let containers = pod.spec.iter().flat_map(|s| s.containers.iter());
    for container in containers {
        let Some(reqs) = &container.resources else {
            continue;
        };
        for quantities in [&reqs.limits, &reqs.requests].into_iter().flatten() {
            for (resource, quantity) in quantities {
                if parse_quantity(&quantity.0).is_ok_and(|q| !q.is_zero()) {
                    resources.insert(resource.clone());
                }
            }
        }
    }
    PodObservation {
        name: pod.name_any(),
        phase,
        node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        terminating: pod.metadata.deletion_timestamp.is_some(),
        exit_codes,
        resources,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn pod_observation_reads_phase_node_exit_codes_and_resources() {
        let p = pod(json!({
            "metadata": {"name": "p0", "deletionTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {
                "nodeName": "node-a",
                "containers": [
                    {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "0"}}},
                    {"name": "b", "resources": {"requests": {"memory": "1Gi", "example.com/zero": "0m"}}}
                ],
                "initContainers": [
                    {"name": "init", "resources": {"limits": {"example.com/init": "1"}}}
                ]
            },
            "status": {
                "phase": "Failed",
                "containerStatuses": [
                    {"name": "a", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 42}}},
                    {"name": "b", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 0}},
                     "lastState": {"terminated": {"exitCode": 7}}}
                ],
                "initContainerStatuses": [
                    {"name": "init", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 9}}}
                ]
            }
        }));
        let o = pod_observation(&p);
        assert_eq!(o.name, "p0");
        assert_eq!(o.phase, PodPhase::Failed);
        assert_eq!(o.node_name.as_deref(), Some("node-a"));
        assert!(o.terminating);
        assert_eq!(
            o.exit_codes,
            [42],
            "current state of regular containers only"
        );
        assert_eq!(
            o.resources,
            BTreeSet::from(["memory".to_owned(), "nvidia.com/gpu".to_owned()])
        );
    }

    #[test]
    fn pod_without_status_is_unknown() {
        let o = pod_observation(&pod(json!({"metadata": {"name": "p"}})));
        assert_eq!(o.phase, PodPhase::Unknown);
        assert!(o.exit_codes.is_empty() && o.resources.is_empty());
    }
}
