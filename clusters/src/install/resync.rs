//! Making a kubelet sync a pod now: a Secret or ConfigMap volume follows its object only when
//! the kubelet syncs the pod, which it does on every change to the pod and otherwise once per
//! `syncFrequency` (a minute unless the cluster says otherwise). An annotation is such a change.

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use super::InstallError;

/// The annotation that carries the version of the object the pods should see.
pub const ANNOTATION: &str = "awconf.dev/volumes-of";

/// Annotates the pods `selector` picks with `version`; their kubelets sync them at once.
pub async fn pods(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    version: &str,
) -> Result<(), InstallError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let patch = Patch::Merge(json!({ "metadata": { "annotations": { ANNOTATION: version } } }));
    for pod in api
        .list(&ListParams::default().labels(selector))
        .await?
        .items
    {
        if let Some(name) = pod.metadata.name {
            api.patch(&name, &PatchParams::default(), &patch).await?;
        }
    }
    Ok(())
}

/// The resource version of the Secret once it holds a non-empty `key`.
pub async fn secret_with(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<Option<String>, InstallError> {
    let secret = Api::<Secret>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await?;
    Ok(secret.and_then(|s| {
        let filled = s
            .data
            .as_ref()
            .and_then(|data| data.get(key))
            .is_some_and(|value| !value.0.is_empty());
        filled.then_some(s.metadata.resource_version).flatten()
    }))
}
