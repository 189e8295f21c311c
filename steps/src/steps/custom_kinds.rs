//! Kinds a scenario serves through a CustomResourceDefinition of its own, in the API group
//! `<namespace>.awconf.dev` (so that scenarios running at once never share one), and takes
//! away again. The CRD and the role that lets the controller manage its objects are removed
//! with the scenario's namespace.

use super::outcome::Outcome;
use std::time::Duration;

use anyhow::Context as _;
use cucumber::{given, when};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, PostParams};
use serde_json::json;

use crate::wait::{self, Check};
use crate::world::AwWorld;

/// The version every scenario-own kind is served at.
const VERSION: &str = "v1";

/// The API group of the scenario's own kinds; its YAML names it `${namespace}.awconf.dev`.
fn group(w: &AwWorld) -> String {
    format!("{}.awconf.dev", w.ns)
}

fn plural(kind: &str) -> String {
    format!("{}s", kind.to_lowercase())
}

fn crd_name(w: &AwWorld, kind: &str) -> String {
    format!("{}.{}", plural(kind), group(w))
}

fn crd(w: &AwWorld, kind: &str) -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(w, kind)},
        "spec": {
            "group": group(w),
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural(kind),
                "singular": kind.to_lowercase(),
                "listKind": format!("{kind}List"),
            },
            "versions": [{
                "name": VERSION,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                }},
            }],
        },
    }))?)
}

#[given(regex = r#"^a kind "(\w+)" of the scenario's own, which the controller may manage$"#)]
async fn own_kind(w: &mut AwWorld, kind: String) -> Outcome {
    let name = crd_name(w, &kind);
    w.own_cluster_objects.push((
        ApiResource::erase::<CustomResourceDefinition>(&()),
        name.clone(),
    ));
    clusters::crds::install(&w.client, &[crd(w, &kind)?])
        .await
        .with_context(|| format!("serving CustomResourceDefinition {name}"))?;
    grant_to_controller(w, &kind).await?;
    w.note(format!("serving kind {kind} in {}/{VERSION}", group(w)));
    Ok(())
}

/// A controller in the cluster runs as a service account of its namespace, with roles for the
/// kinds it was installed to wrap: it gets one for this kind too. Elsewhere it runs with the
/// run's own credentials.
async fn grant_to_controller(w: &mut AwWorld, kind: &str) -> anyhow::Result<()> {
    let Some(namespace) = w.h.options.controller.service_account_namespace() else {
        return Ok(());
    };
    let name = format!("awconf-{}-{}", w.ns, plural(kind));
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [{
            "apiGroups": [group(w)],
            "resources": [plural(kind)],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        }],
    }))?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": format!("system:serviceaccounts:{namespace}"),
        }],
    }))?;
    Api::<ClusterRole>::all(w.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .with_context(|| format!("creating ClusterRole {name}"))?;
    w.own_cluster_objects
        .push((ApiResource::erase::<ClusterRole>(&()), name.clone()));
    Api::<ClusterRoleBinding>::all(w.client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .with_context(|| format!("creating ClusterRoleBinding {name}"))?;
    w.own_cluster_objects
        .push((ApiResource::erase::<ClusterRoleBinding>(&()), name));
    Ok(())
}

/// Deletes the kind's CRD (and so every object of it) and waits until discovery no longer
/// serves its group version.
#[when(regex = r#"^the kind "(\w+)" stops being served$"#)]
async fn stops_being_served(w: &mut AwWorld, kind: String) -> Outcome {
    let crds = Api::<CustomResourceDefinition>::all(w.client.clone());
    let name = crd_name(w, &kind);
    crds.delete(&name, &Default::default())
        .await
        .with_context(|| format!("deleting CustomResourceDefinition {name}"))?;
    let group_version = format!("{}/{VERSION}", group(w));
    let (crds, name_ref, client, gv) = (&crds, name.as_str(), &w.client, group_version.as_str());
    wait::eventually(
        Duration::from_secs(60),
        &format!("CustomResourceDefinition {name} to be gone and {gv} no longer served"),
        move || async move {
            if let Some(crd) = crds.get_opt(name_ref).await? {
                return Ok(Check::NotYet(crate::yaml::render(&objects::to_value(
                    &crd.status,
                ))));
            }
            Ok(match client.list_api_group_resources(gv).await {
                Err(kube::Error::Api(status)) if status.code == 404 => Check::Done(()),
                Err(e) => return Err(e.into()),
                Ok(_) => Check::NotYet(format!("{gv} is still served")),
            })
        },
    )
    .await?;
    w.note(format!("kind {kind} is no longer served"));
    Ok(())
}
