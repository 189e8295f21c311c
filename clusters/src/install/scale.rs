//! Taking an installed component down and up again, as a crash or an operator would: its
//! Deployment scaled to zero, its pods deleted gracefully or with grace period 0.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

use super::{InstallError, ready};

/// An installed Deployment the harness can stop, kill and start.
#[derive(Clone)]
pub struct Workload {
    pub client: kube::Client,
    pub namespace: String,
    pub deployment: String,
    /// Its pods' label selector.
    pub selector: String,
}

impl Workload {
    async fn scale(&self, replicas: i32) -> Result<(), InstallError> {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
        api.patch(
            &self.deployment,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "replicas": replicas } })),
        )
        .await?;
        Ok(())
    }

    async fn delete_pods(&self, grace_seconds: Option<u32>) -> Result<(), InstallError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = DeleteParams {
            grace_period_seconds: grace_seconds,
            ..DeleteParams::default()
        };
        api.delete_collection(&params, &ListParams::default().labels(&self.selector))
            .await?;
        Ok(())
    }

    async fn no_pods(&self) -> Result<Result<(), String>, InstallError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let pods = api
            .list(&ListParams::default().labels(&self.selector))
            .await?;
        Ok(match pods.items.len() {
            0 => Ok(()),
            n => Err(format!("{n} pods of {} remain", self.deployment)),
        })
    }

    /// The Deployment controller has seen the scale-down, so its ReplicaSet wants no pod.
    async fn scaled_down(&self) -> Result<Result<(), String>, InstallError> {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
        let deployment = api.get(&self.deployment).await?;
        let observed = deployment
            .status
            .as_ref()
            .and_then(|s| s.observed_generation)
            >= deployment.metadata.generation;
        Ok(if observed {
            Ok(())
        } else {
            Err(format!(
                "{} has not seen its scale-down yet",
                self.deployment
            ))
        })
    }

    /// Scaled to zero; its pods end as their termination grace period allows.
    pub async fn stop(&self) -> Result<(), InstallError> {
        self.scale(0).await?;
        ready::until(&self.deployment, Duration::from_secs(60), || self.no_pods()).await
    }

    /// Scaled to zero and its pods deleted with grace period 0: SIGKILL, as a crash. The
    /// pods go only once the ReplicaSet has been scaled down too, or it would replace them.
    /// A pod deleted with grace period 0 leaves the API at once while its kubelet kills the
    /// container a moment later, so the kill ends only when each kubelet says so.
    pub async fn kill(&self) -> Result<(), InstallError> {
        self.scale(0).await?;
        ready::until(&self.deployment, Duration::from_secs(30), || {
            self.scaled_down()
        })
        .await?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let placed: Vec<(String, String)> = api
            .list(&ListParams::default().labels(&self.selector))
            .await?
            .items
            .into_iter()
            .filter_map(|p| Some((p.spec?.node_name?, p.metadata.uid?)))
            .collect();
        self.delete_pods(Some(0)).await?;
        ready::until(&self.deployment, Duration::from_secs(60), || self.no_pods()).await?;
        for (node, uid) in placed {
            ready::until(&self.deployment, Duration::from_secs(60), || {
                self.not_running_on(&node, &uid)
            })
            .await?;
        }
        Ok(())
    }

    /// Whether the kubelet of `node` still runs a container of the pod `uid`: its
    /// `/runningpods/` asks the container runtime (its `/pods` forgets a pod as soon as the API
    /// does), through the API server's node proxy.
    async fn not_running_on(
        &self,
        node: &str,
        uid: &str,
    ) -> Result<Result<(), String>, InstallError> {
        let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/runningpods/"))
            .body(Vec::new())
            .map_err(|e| InstallError::Other(e.to_string()))?;
        let pods: k8s_openapi::List<Pod> = self.client.request(request).await?;
        Ok(if still_running(&pods.items, uid) {
            Err(format!(
                "the kubelet of {node} still runs the killed pod {uid}"
            ))
        } else {
            Ok(())
        })
    }

    /// One replica again; waits until it is available.
    pub async fn start(&self, timeout: Duration) -> Result<(), InstallError> {
        self.scale(1).await?;
        ready::until(&self.deployment, timeout, || {
            ready::deployment_available(&self.client, &self.namespace, &self.deployment)
        })
        .await
    }
}

/// Whether the pod `uid` is among a kubelet's running pods.
pub fn still_running(running: &[Pod], uid: &str) -> bool {
    running
        .iter()
        .any(|p| p.metadata.uid.as_deref() == Some(uid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_pod_is_gone_once_its_kubelet_runs_none_of_its_containers() {
        let pod = |uid: &str| -> Pod {
            serde_json::from_value(json!({ "metadata": { "uid": uid } })).unwrap()
        };
        assert!(still_running(&[pod("a"), pod("b")], "a"));
        assert!(!still_running(&[pod("b")], "a"));
        assert!(!still_running(&[], "a"));
    }
}
