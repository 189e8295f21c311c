//! AppWrappers, their pods, components and Workloads as a cluster holds them: the reads,
//! writes and small judgements the steps, the invariant monitor and the reports share.

pub mod yaml;

use std::collections::HashMap;
use std::sync::Mutex;

use anyhow::Context as _;
use appwrapper_controller::api::{APPWRAPPER_LABEL, AppWrapper};
use clusters::webhook_retry;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::Value;

/// The label of the harness's own latency-probe AppWrappers, which belong to no scenario.
pub const PROBE_LABEL: &str = "awconf.dev/latency-probe";

pub fn appwrapper_resource() -> ApiResource {
    ApiResource::erase::<AppWrapper>(&())
}

pub fn appwrappers(client: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, &appwrapper_resource())
}

pub fn to_value<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The AppWrapper as JSON, `None` when it does not exist.
pub async fn get_appwrapper(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Option<Value>> {
    let found = appwrappers(client, namespace)
        .get_opt(name)
        .await
        .with_context(|| format!("reading AppWrapper {namespace}/{name}"))?;
    Ok(found.as_ref().map(to_value))
}

pub async fn create_appwrapper(client: &kube::Client, object: &Value) -> anyhow::Result<Value> {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let aw: DynamicObject = serde_json::from_value(object.clone())?;
    let api = appwrappers(client, namespace);
    let params = PostParams::default();
    let created = webhook_retry::write(namespace, || api.create(&params, &aw))
        .await
        // The cause before the object, which is long.
        .map_err(|e| {
            anyhow::anyhow!(
                "creating AppWrapper {namespace}/{}: {e:#}\n{}",
                object["metadata"]["name"].as_str().unwrap_or_default(),
                yaml::render(object)
            )
        })?;
    Ok(to_value(&created))
}

pub async fn patch_appwrapper(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    patch: &Value,
) -> anyhow::Result<()> {
    let api = appwrappers(client, namespace);
    let (params, patch) = (PatchParams::default(), Patch::Merge(patch));
    webhook_retry::write(namespace, || api.patch(name, &params, &patch))
        .await
        .with_context(|| format!("patching AppWrapper {namespace}/{name}"))?;
    Ok(())
}

/// The pods labelled `workload.codeflare.dev/appwrapper=<name>`.
pub async fn pods_of(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{APPWRAPPER_LABEL}={name}");
    Ok(api
        .list(&ListParams::default().labels(&selector))
        .await
        .with_context(|| format!("listing pods of AppWrapper {namespace}/{name}"))?
        .items)
}

pub fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn resources() -> &'static Mutex<HashMap<(String, String), ApiResource>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<(String, String), ApiResource>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The API resource of an apiVersion and kind, through discovery (cached).
pub async fn resolve(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
) -> anyhow::Result<ApiResource> {
    let key = (api_version.to_string(), kind.to_string());
    if let Some(found) = resources().lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(found);
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("discovering {api_version} {kind}"))?;
    if let Ok(mut cache) = resources().lock() {
        cache.insert(key, resource.clone());
    }
    Ok(resource)
}

pub async fn dynamic_api(
    client: &kube::Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
) -> anyhow::Result<Api<DynamicObject>> {
    let resource = resolve(client, api_version, kind).await?;
    Ok(Api::namespaced_with(client.clone(), namespace, &resource))
}

pub async fn get_object(
    client: &kube::Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
    name: &str,
) -> anyhow::Result<Option<Value>> {
    let api = dynamic_api(client, namespace, api_version, kind).await?;
    Ok(api
        .get_opt(name)
        .await
        .with_context(|| format!("reading {kind} {namespace}/{name}"))?
        .as_ref()
        .map(to_value))
}

pub async fn delete_object(
    client: &kube::Client,
    namespace: &str,
    api_version: &str,
    kind: &str,
    name: &str,
) -> anyhow::Result<()> {
    let api = dynamic_api(client, namespace, api_version, kind).await?;
    api.delete(name, &DeleteParams::background())
        .await
        .with_context(|| format!("deleting {kind} {namespace}/{name}"))?;
    Ok(())
}

/// Whether `object`'s controller is the AppWrapper `appwrapper`: only such an object belongs to
/// the workload. An object that merely has a component's name is not the controller's to
/// delete.
pub fn controlled_by(object: &Value, appwrapper: &str) -> bool {
    object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["kind"] == "AppWrapper" && r["name"] == appwrapper && r["controller"] == true)
}

/// (apiVersion, kind, name) of the components an AppWrapper's status names.
pub fn components_of(appwrapper: &Value) -> Vec<(String, String, String)> {
    appwrapper["status"]["componentStatus"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| {
                    let name = c["name"].as_str().filter(|n| !n.is_empty())?;
                    Some((
                        c["apiVersion"].as_str()?.to_string(),
                        c["kind"].as_str()?.to_string(),
                        name.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The wrapped objects of an AppWrapper that still exist.
pub async fn remaining_objects(
    client: &kube::Client,
    namespace: &str,
    appwrapper: &Value,
) -> anyhow::Result<Vec<String>> {
    let owner = appwrapper["metadata"]["name"].as_str().unwrap_or_default();
    let mut left = Vec::new();
    for (api_version, kind, name) in components_of(appwrapper) {
        if get_object(client, namespace, &api_version, &kind, &name)
            .await?
            .is_some_and(|o| controlled_by(&o, owner))
        {
            left.push(format!("{kind} {name}"));
        }
    }
    Ok(left)
}

/// The Kueue Workloads of a namespace.
pub async fn workloads_in(
    client: &kube::Client,
    namespace: &str,
) -> anyhow::Result<Vec<DynamicObject>> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &clusters::kueue::objects::api_resource("Workload"),
    );
    Ok(api
        .list(&ListParams::default())
        .await
        .context("listing Kueue Workloads")?
        .items)
}

pub fn owned_by_appwrapper(object: &DynamicObject, appwrapper: &str) -> bool {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "AppWrapper" && o.name == appwrapper)
}

/// The Kueue Workload owned by an AppWrapper.
pub async fn workload_of(
    client: &kube::Client,
    namespace: &str,
    appwrapper: &str,
) -> anyhow::Result<Option<Value>> {
    Ok(workloads_in(client, namespace)
        .await?
        .iter()
        .find(|w| owned_by_appwrapper(w, appwrapper))
        .map(to_value))
}

pub fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

pub fn phase_of(object: &Value) -> &str {
    object["status"]["phase"].as_str().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn components_with_names_are_listed() {
        let aw = json!({"status": {"componentStatus": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p"},
            {"apiVersion": "batch/v1", "kind": "Job", "name": ""},
        ]}});
        assert_eq!(
            components_of(&aw),
            vec![("v1".to_string(), "Pod".to_string(), "p".to_string())]
        );
    }

    #[test]
    fn conditions_are_found_by_type() {
        let aw = json!({"status": {"phase": "Running", "conditions": [{"type": "A", "status": "True"}]}});
        assert_eq!(condition(&aw, "A").unwrap()["status"], "True");
        assert!(condition(&aw, "B").is_none());
        assert_eq!(phase_of(&aw), "Running");
    }
}

#[cfg(test)]
mod ownership_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_appwrapper_as_controller_owns_an_object() {
        let owned = |name: &str, controller: bool| {
            json!({"metadata": {"ownerReferences": [
                {"kind": "AppWrapper", "name": name, "controller": controller}]}})
        };
        assert!(controlled_by(&owned("aw", true), "aw"));
        assert!(!controlled_by(&owned("aw", false), "aw"));
        assert!(!controlled_by(&owned("other", true), "aw"));
        assert!(!controlled_by(&json!({"metadata": {}}), "aw"));
    }
}
