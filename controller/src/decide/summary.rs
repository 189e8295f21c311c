//! Pod summary (§3.1), expected pod count (§3.2) and component summary (§3.3).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{ObjectState, Observation, PodObservation, PodPhase};
use crate::annotations::FaultTolerance;
use crate::api::AppWrapperStatus;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSummary {
    pub pending: i64,
    pub running: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub terminal_failure: bool,
    /// Nodes where a running pod uses a resource that Autopilot flagged NoExecute.
    pub no_execute_nodes: BTreeSet<String>,
}

pub fn pod_summary(
    pods: &[PodObservation],
    ft: &FaultTolerance,
    no_execute: &BTreeMap<String, BTreeSet<String>>,
    monitor_nodes: bool,
) -> PodSummary {
    let mut s = PodSummary::default();
    for pod in pods {
        match pod.phase {
            PodPhase::Pending => s.pending += 1,
            PodPhase::Running if !pod.terminating => {
                s.running += 1;
                if monitor_nodes
                    && let Some(node) = &pod.node_name
                    && let Some(flagged) = no_execute.get(node)
                    && pod.resources.iter().any(|r| flagged.contains(r))
                {
                    s.no_execute_nodes.insert(node.clone());
                }
            }
            PodPhase::Running | PodPhase::Unknown => {}
            PodPhase::Succeeded => s.succeeded += 1,
            PodPhase::Failed => {
                s.failed += 1;
                if pod.exit_codes.iter().any(|&c| ft.is_terminal_exit_code(c)) {
                    s.terminal_failure = true;
                }
            }
        }
    }
    s
}

/// Sum of the replicas (absent ⇒ 1) of every effective PodSet.
pub fn expected_pods(status: &AppWrapperStatus, obs: &Observation) -> Result<i64, String> {
    let count = |pod_sets: &mut dyn Iterator<Item = Option<i32>>| {
        pod_sets.map(|r| i64::from(r.unwrap_or(1))).sum::<i64>()
    };
    if status.component_status.len() == obs.component_count {
        return Ok(count(
            &mut status
                .component_status
                .iter()
                .flat_map(|c| c.pod_sets.iter().map(|p| p.replicas)),
        ));
    }
    let pod_sets = obs.effective_pod_sets.as_ref().map_err(Clone::clone)?;
    Ok(count(
        &mut pod_sets.iter().flat_map(|c| c.iter().map(|p| p.replicas)),
    ))
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ComponentSummary {
    pub expected: usize,
    pub deployed: usize,
    pub failed: u32,
}

pub fn component_summary(
    status: &AppWrapperStatus,
    obs: &Observation,
) -> Result<ComponentSummary, String> {
    let mut s = ComponentSummary {
        expected: status.component_status.len(),
        ..ComponentSummary::default()
    };
    for (i, cs) in status.component_status.iter().enumerate() {
        match obs.component(i).object {
            ObjectState::Found(found) if !found.deleting => {
                s.deployed += 1;
                s.failed += found.failed_conditions;
            }
            ObjectState::Found(_) | ObjectState::NotFound => {}
            ObjectState::Error(e) | ObjectState::Unserved(e) => return Err(e),
            ObjectState::NotObserved => {
                return Err(format!(
                    "component {i} ({} {} {:?}) was not observed",
                    cs.api_version, cs.kind, cs.name
                ));
            }
        }
    }
    Ok(s)
}

/// The per-kind failure rule of §3.3: `Failed=True` entries of `status.conditions` of
/// `batch/v1` Jobs and `kubeflow.org/v1` PyTorchJobs; nothing for any other kind.
pub fn count_failed_conditions(api_version: &str, kind: &str, object: &Value) -> u32 {
    if !matches!(
        (api_version, kind),
        ("batch/v1", "Job") | ("kubeflow.org/v1", "PyTorchJob")
    ) {
        return 0;
    }
    let Some(conditions) = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
    else {
        return 0;
    };
    let failed = conditions
        .iter()
        .filter(|c| {
            c.get("type").and_then(Value::as_str) == Some("Failed")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
        .count();
    u32::try_from(failed).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failed_conditions_only_for_jobs_and_pytorchjobs() {
        let obj = json!({"status": {"conditions": [
            {"type": "Failed", "status": "True"},
            {"type": "Failed", "status": "False"},
            {"type": "Complete", "status": "True"},
            "garbage",
            {"type": "Failed"},
            {"type": "Failed", "status": "True"}
        ]}});
        assert_eq!(count_failed_conditions("batch/v1", "Job", &obj), 2);
        assert_eq!(
            count_failed_conditions("kubeflow.org/v1", "PyTorchJob", &obj),
            2
        );
        assert_eq!(count_failed_conditions("ray.io/v1", "RayCluster", &obj), 0);
        assert_eq!(count_failed_conditions("ray.io/v1", "RayJob", &obj), 0);
        assert_eq!(count_failed_conditions("batch/v1beta1", "Job", &obj), 0);
        assert_eq!(count_failed_conditions("batch/v1", "Job", &json!({})), 0);
    }

    /// §3.3: only `Failed` entries whose status is `True` count, whatever else is listed.
    #[test]
    fn failed_conditions_count_only_status_true() {
        let conditions = |statuses: &[&str]| {
            let entries: Vec<_> = statuses
                .iter()
                .map(|s| json!({"type": "Failed", "status": s}))
                .collect();
            json!({"status": {"conditions": entries}})
        };
        let count =
            |statuses: &[&str]| count_failed_conditions("batch/v1", "Job", &conditions(statuses));
        assert_eq!(count(&["True"]), 1);
        assert_eq!(count(&["False", "Unknown"]), 0);
        assert_eq!(count(&["True", "False", "True"]), 2);
    }
}
