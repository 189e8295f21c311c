//! The controller owner reference from a wrapped object to its AppWrapper (§1.6, §4.2 step 5),
//! with controller-runtime's `SetControllerReference` semantics.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Object {namespace}/{name} is already owned by another {owner_kind} controller {owner_name}"
)]
pub struct AlreadyOwned {
    pub namespace: String,
    pub name: String,
    pub owner_kind: String,
    pub owner_name: String,
}

/// `{apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true}`.
pub fn controller_reference(
    api_version: &str,
    kind: &str,
    name: &str,
    uid: &str,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        uid: uid.to_string(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Adds `owner` to `metadata.ownerReferences`, replacing a reference to the same object
/// (same API group, kind and name). Fails if another object is already the controller.
/// Malformed existing references are dropped, as the reference's accessors do.
pub fn set_controller_reference(
    metadata: &mut Map<String, Value>,
    owner: OwnerReference,
) -> Result<(), AlreadyOwned> {
    let mut references: Vec<OwnerReference> = metadata
        .get("ownerReferences")
        .cloned()
        .and_then(|refs| serde_json::from_value(refs).ok())
        .unwrap_or_default();
    if let Some(controller) = references
        .iter()
        .find(|r| r.controller == Some(true))
        .filter(|r| !same_object(r, &owner))
    {
        let field = |key: &str| {
            metadata
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        return Err(AlreadyOwned {
            namespace: field("namespace"),
            name: field("name"),
            owner_kind: controller.kind.clone(),
            owner_name: controller.name.clone(),
        });
    }
    match references.iter().position(|r| same_object(r, &owner)) {
        Some(i) => references[i] = owner,
        None => references.push(owner),
    }
    let references = references
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_default();
    metadata.insert("ownerReferences".to_string(), Value::Array(references));
    Ok(())
}

fn same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    group(&a.api_version) == group(&b.api_version) && a.kind == b.kind && a.name == b.name
}

fn group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// The name in the controller owner reference, if there is one.
pub fn controller_name(owners: &[OwnerReference]) -> Option<&str> {
    owners
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| o.name.as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ours() -> OwnerReference {
        controller_reference(
            "workload.codeflare.dev/v1beta2",
            "AppWrapper",
            "aw",
            "uid-1",
        )
    }

    fn metadata(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn adds_a_blocking_controller_reference() {
        let mut md = metadata(json!({"name": "job"}));
        assert_eq!(set_controller_reference(&mut md, ours()), Ok(()));
        assert_eq!(
            md["ownerReferences"],
            json!([{
                "apiVersion": "workload.codeflare.dev/v1beta2",
                "kind": "AppWrapper",
                "name": "aw",
                "uid": "uid-1",
                "controller": true,
                "blockOwnerDeletion": true
            }])
        );
    }

    #[test]
    fn keeps_other_owners_and_replaces_a_stale_reference_to_us() {
        let mut md = metadata(json!({"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u2"},
            {"apiVersion": "workload.codeflare.dev/v1beta1", "kind": "AppWrapper", "name": "aw", "uid": "old", "controller": true}
        ]}));
        assert_eq!(set_controller_reference(&mut md, ours()), Ok(()));
        let refs = md["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0]["name"], json!("cm"));
        assert_eq!(refs[1]["uid"], json!("uid-1"));
        assert_eq!(
            refs[1]["apiVersion"],
            json!("workload.codeflare.dev/v1beta2")
        );
    }

    #[test]
    fn refuses_a_foreign_controller() {
        let mut md = metadata(
            json!({"namespace": "ns", "name": "job", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}
            ]}),
        );
        let err = set_controller_reference(&mut md, ours()).map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("Object ns/job is already owned by another ReplicaSet controller rs".to_string())
        );
    }

    #[test]
    fn a_non_controller_owner_with_another_name_is_kept() {
        let mut md = metadata(json!({"ownerReferences": [
            {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "other", "uid": "u"}
        ]}));
        assert_eq!(set_controller_reference(&mut md, ours()), Ok(()));
        assert_eq!(md["ownerReferences"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn controller_name_reads_only_the_controller_reference() {
        let owners: Vec<OwnerReference> = serde_json::from_value(json!([
            {"apiVersion": "v1", "kind": "X", "name": "other", "uid": "1"},
            {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw", "uid": "2", "controller": true}
        ]))
        .unwrap();
        assert_eq!(controller_name(&owners), Some("aw"));
        assert_eq!(controller_name(&owners[..1]), None);
    }
}
