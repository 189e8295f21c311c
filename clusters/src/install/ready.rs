//! Waiting until an installed component really serves: its Deployment available, its
//! Service's endpoints ready. A timeout says what its pods are doing.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerState, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};

use super::InstallError;
use crate::poll::{self, Look};

/// Polls `check` until it gives `Ok(true)`; on timeout the error names `what` and the last
/// reason `check` gave for not being ready.
pub async fn until<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<(), InstallError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Result<(), String>, InstallError>>,
{
    poll::until(
        timeout,
        Duration::from_millis(500),
        || {
            let checked = check();
            async move {
                Ok(match checked.await? {
                    Ok(()) => Look::Ready(()),
                    Err(why) => Look::NotYet(why),
                })
            }
        },
        |why| InstallError::NotReady {
            what: what.to_string(),
            seconds: timeout.as_secs(),
            why,
        },
    )
    .await
}

/// Ready when the Deployment reports an updated, available replica; otherwise why not,
/// from its pods' states.
pub async fn deployment_available(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Result<(), String>, InstallError> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let deployment = api.get(name).await?;
    let status = deployment.status.unwrap_or_default();
    let observed = status.observed_generation >= deployment.metadata.generation;
    if observed
        && status.available_replicas.unwrap_or(0) >= 1
        && status.updated_replicas.unwrap_or(0) >= 1
    {
        return Ok(Ok(()));
    }
    let selector = deployment
        .spec
        .and_then(|s| s.selector.match_labels)
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let list = pods.list(&ListParams::default().labels(&selector)).await?;
    let states: Vec<String> = list.items.iter().map(pod_state).collect();
    if let Some(hopeless) = list.items.iter().find(|p| is_hopeless(p)) {
        return Err(InstallError::Stuck {
            what: format!("Deployment {namespace}/{name}"),
            why: pod_state(hopeless),
        });
    }
    Ok(Err(if states.is_empty() {
        format!("Deployment {namespace}/{name} has no pod yet")
    } else {
        format!("Deployment {namespace}/{name}: {}", states.join("; "))
    }))
}

/// Ready when the Service has a ready endpoint.
pub async fn service_endpoints_ready(
    client: &kube::Client,
    namespace: &str,
    service: &str,
) -> Result<Result<(), String>, InstallError> {
    let api: Api<EndpointSlice> = Api::namespaced(client.clone(), namespace);
    let selector = format!("kubernetes.io/service-name={service}");
    let slices = api.list(&ListParams::default().labels(&selector)).await?;
    let ready = slices
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .any(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false));
    Ok(if ready {
        Ok(())
    } else {
        Err(format!(
            "Service {namespace}/{service} has no ready endpoint"
        ))
    })
}

/// A pod that waits for something no retry will bring: a missing image that may not be
/// pulled, or a container its own settings forbid to start.
fn is_hopeless(pod: &Pod) -> bool {
    const REASONS: [&str; 3] = [
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "InvalidImageName",
    ];
    any_container(pod, |state| {
        state
            .waiting
            .as_ref()
            .and_then(|w| w.reason.as_deref())
            .is_some_and(|r| REASONS.contains(&r))
    })
}

/// Whether any of the pod's containers is in a state `test` accepts.
pub fn any_container(pod: &Pod, test: impl Fn(&ContainerState) -> bool) -> bool {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .any(|c| c.state.as_ref().is_some_and(&test))
}

/// `name: phase (container: waiting reason: message)`, the part of a pod's status that says
/// why it does not run.
pub fn pod_state(pod: &Pod) -> String {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.unwrap_or_else(|| "Pending".into());
    let mut details = Vec::new();
    for c in status.container_statuses.unwrap_or_default() {
        let state = c.state.unwrap_or_default();
        if let Some(w) = state.waiting {
            details.push(format!(
                "{} waiting {}{}",
                c.name,
                w.reason.unwrap_or_default(),
                w.message.map(|m| format!(": {m}")).unwrap_or_default()
            ));
        } else if let Some(t) = state.terminated {
            details.push(format!("{} exited {}", c.name, t.exit_code));
        } else if !c.ready {
            details.push(format!("{} running, not ready", c.name));
        }
        if c.restart_count > 0 {
            details.push(format!("{} restarted {} times", c.name, c.restart_count));
        }
    }
    for condition in status.conditions.unwrap_or_default() {
        if condition.type_ == "PodScheduled" && condition.status == "False" {
            details.push(format!(
                "unschedulable: {}",
                condition.message.unwrap_or_default()
            ));
        }
    }
    if details.is_empty() {
        format!("{name}: {phase}")
    } else {
        format!("{name}: {phase} ({})", details.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_state_says_why_it_does_not_run() {
        let cases = [
            (
                json!({"metadata": {"name": "kueue-1"}, "status": {"phase": "Pending",
                    "containerStatuses": [{"name": "manager", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                        "state": {"waiting": {"reason": "ErrImageNeverPull", "message": "image not present"}}}]}}),
                "kueue-1: Pending (manager waiting ErrImageNeverPull: image not present)",
            ),
            (
                json!({"metadata": {"name": "kwok-1"}, "status": {"phase": "Running",
                    "containerStatuses": [{"name": "kwok", "ready": false, "restartCount": 2, "image": "i", "imageID": "",
                        "state": {"running": {}}}]}}),
                "kwok-1: Running (kwok running, not ready, kwok restarted 2 times)",
            ),
            (
                json!({"metadata": {"name": "c-1"}, "status": {"phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available"}]}}),
                "c-1: Pending (unschedulable: 0/3 nodes are available)",
            ),
        ];
        for (pod, want) in cases {
            let pod: Pod = serde_json::from_value(pod).unwrap();
            assert_eq!(pod_state(&pod), want);
        }
    }
}
