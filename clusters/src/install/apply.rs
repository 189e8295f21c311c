//! Server-side apply of rendered manifests: namespaces and CRDs first, then the rest, each
//! through the API its kind is served by.

use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use serde_json::Value;

use super::InstallError;
use super::manifests::is_foundation;
use crate::poll::{self, Look};

pub const FIELD_MANAGER: &str = "awconf";

/// How long a kind whose CRD was just applied may take to be discovered.
const SERVED_WITHIN: Duration = Duration::from_secs(30);

/// Objects of the rest applied at once.
const AT_ONCE: usize = 8;

/// Applies `objects`: namespaces and CRDs first (waiting until the CRDs are served), then the
/// rest several at once, then the admission webhook configurations, so that no webhook is
/// called before the objects that serve it exist.
pub async fn apply_all(client: &kube::Client, objects: &[Value]) -> Result<(), InstallError> {
    let (foundation, rest): (Vec<&Value>, Vec<&Value>) =
        objects.iter().partition(|o| is_foundation(o));
    let mut crds = Vec::new();
    for object in foundation {
        if object["kind"] == "CustomResourceDefinition" {
            let crd: CustomResourceDefinition = serde_json::from_value(object.clone())
                .map_err(|e| InstallError::Render(format!("{}: {e}", describe(object))))?;
            crds.push(crd);
        } else {
            apply(client, object).await?;
        }
    }
    crate::crds::install(client, &crds).await?;
    let (webhooks, rest): (Vec<&Value>, Vec<&Value>) =
        rest.into_iter().partition(|o| is_webhook_configuration(o));
    futures::stream::iter(rest.into_iter().map(|object| apply(client, object)))
        .buffer_unordered(AT_ONCE)
        .try_collect::<Vec<()>>()
        .await?;
    for object in webhooks {
        apply(client, object).await?;
    }
    Ok(())
}

fn is_webhook_configuration(object: &Value) -> bool {
    object["apiVersion"] == "admissionregistration.k8s.io/v1"
        && matches!(
            object["kind"].as_str(),
            Some("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration")
        )
}

/// Applies one object, forcing ownership of its fields to awconf.
pub async fn apply(client: &kube::Client, object: &Value) -> Result<(), InstallError> {
    let api = api_for(client, object).await?;
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(name, &params, &Patch::Apply(object))
        .await
        .map_err(|e| InstallError::Apply(describe(object), e))?;
    Ok(())
}

/// The API of the object's kind, namespaced or not as discovery says. A kind whose CRD was
/// applied a moment ago may take a few seconds to be discovered.
async fn api_for(
    client: &kube::Client,
    object: &Value,
) -> Result<Api<DynamicObject>, InstallError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let gvk = &gvk;
    let (resource, capabilities) = poll::until(
        SERVED_WITHIN,
        Duration::from_millis(500),
        move || async move {
            Ok(match discovery::pinned_kind(client, gvk).await {
                Ok(found) => Look::Ready(found),
                Err(e) => Look::NotYet(e.to_string()),
            })
        },
        |why| InstallError::NotReady {
            what: format!("the kind of {}", describe(object)),
            seconds: SERVED_WITHIN.as_secs(),
            why,
        },
    )
    .await?;
    Ok(match capabilities.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => {
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("default");
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
    })
}

/// `Kind namespace/name`, for messages.
pub fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    let name = object["metadata"]["name"].as_str().unwrap_or("?");
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_admission_webhook_configurations_wait_for_the_rest() {
        let object =
            |api_version: &str, kind: &str| json!({ "apiVersion": api_version, "kind": kind });
        for (api_version, kind, last) in [
            (
                "admissionregistration.k8s.io/v1",
                "MutatingWebhookConfiguration",
                true,
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                true,
            ),
            (
                "admissionregistration.k8s.io/v1",
                "ValidatingAdmissionPolicy",
                false,
            ),
            ("apps/v1", "Deployment", false),
            ("v1", "Service", false),
        ] {
            assert_eq!(
                is_webhook_configuration(&object(api_version, kind)),
                last,
                "{kind}"
            );
        }
    }
}
