//! The CustomResourceDefinition generated from the types in [`crate::api`], adjusted to be
//! equivalent to the reference's (§1.1–1.3).

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSON, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::CustomResourceExt;

use crate::api::AppWrapper;

/// The AppWrapper CRD. Differences from kube's derive output, all towards the reference:
/// `spec` is optional; no field is `nullable`; `status.phase` is a plain string; conditions
/// (AppWrapper and component level) carry metav1.Condition's validations and are list maps
/// keyed by `type`; `apiVersion`, `kind` and `metadata` are declared at the root.
pub fn appwrapper_crd() -> CustomResourceDefinition {
    let mut crd = AppWrapper::crd();
    for version in &mut crd.spec.versions {
        if let Some(root) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            conform(root);
        }
    }
    crd
}

fn conform(root: &mut JSONSchemaProps) {
    strip_nullable(root);
    if let Some(required) = root.required.as_mut() {
        required.retain(|field| field != "spec");
    }
    if root.required.as_ref().is_some_and(Vec::is_empty) {
        root.required = None;
    }
    let properties = root.properties.get_or_insert_with(BTreeMap::new);
    properties.insert("apiVersion".into(), typed("string"));
    properties.insert("kind".into(), typed("string"));
    properties.insert("metadata".into(), typed("object"));
    if let Some(status) = properties.get_mut("status") {
        if let Some(phase) = property(status, "phase") {
            *phase = JSONSchemaProps {
                description: Some("Phase of the AppWrapper object".into()),
                ..typed("string")
            };
        }
        if let Some(conditions) = property(status, "conditions") {
            make_condition_list(conditions);
        }
        if let Some(conditions) = property(status, "componentStatus")
            .and_then(items)
            .and_then(|item| property(item, "conditions"))
        {
            make_condition_list(conditions);
        }
    }
}

fn property<'s>(schema: &'s mut JSONSchemaProps, name: &str) -> Option<&'s mut JSONSchemaProps> {
    schema.properties.as_mut()?.get_mut(name)
}

fn items(schema: &mut JSONSchemaProps) -> Option<&mut JSONSchemaProps> {
    match schema.items.as_mut()? {
        JSONSchemaPropsOrArray::Schema(item) => Some(item),
        JSONSchemaPropsOrArray::Schemas(_) => None,
    }
}

fn typed(type_: &str) -> JSONSchemaProps {
    JSONSchemaProps {
        type_: Some(type_.into()),
        ..Default::default()
    }
}

fn strip_nullable(schema: &mut JSONSchemaProps) {
    schema.nullable = None;
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        strip_nullable(child);
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(item)) => strip_nullable(item),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().for_each(strip_nullable),
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = schema.additional_properties.as_mut() {
        strip_nullable(values);
    }
}

fn make_condition_list(list: &mut JSONSchemaProps) {
    list.items = Some(JSONSchemaPropsOrArray::Schema(Box::new(condition())));
    list.x_kubernetes_list_type = Some("map".into());
    list.x_kubernetes_list_map_keys = Some(vec!["type".into()]);
}

/// metav1.Condition with the validations controller-gen emits for it.
fn condition() -> JSONSchemaProps {
    let string = |description: &str| JSONSchemaProps {
        description: Some(description.into()),
        ..typed("string")
    };
    let properties = BTreeMap::from([
        (
            "lastTransitionTime".to_string(),
            JSONSchemaProps {
                format: Some("date-time".into()),
                ..string("lastTransitionTime is the last time the condition transitioned from one status to another.")
            },
        ),
        (
            "message".to_string(),
            JSONSchemaProps {
                max_length: Some(32768),
                ..string("message is a human readable message indicating details about the transition.")
            },
        ),
        (
            "observedGeneration".to_string(),
            JSONSchemaProps {
                description: Some("observedGeneration represents the .metadata.generation that the condition was set based upon.".into()),
                format: Some("int64".into()),
                minimum: Some(0.0),
                ..typed("integer")
            },
        ),
        (
            "reason".to_string(),
            JSONSchemaProps {
                max_length: Some(1024),
                min_length: Some(1),
                pattern: Some("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$".into()),
                ..string("reason contains a programmatic identifier indicating the reason for the condition's last transition.")
            },
        ),
        (
            "status".to_string(),
            JSONSchemaProps {
                enum_: Some(["True", "False", "Unknown"].map(|s| JSON(s.into())).to_vec()),
                ..string("status of the condition, one of True, False, Unknown.")
            },
        ),
        (
            "type".to_string(),
            JSONSchemaProps {
                max_length: Some(316),
                pattern: Some(
                    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                        .into(),
                ),
                ..string("type of condition in CamelCase or in foo.example.com/CamelCase.")
            },
        ),
    ]);
    JSONSchemaProps {
        description: Some(
            "Condition contains details for one aspect of the current state of this API Resource."
                .into(),
        ),
        properties: Some(properties),
        required: Some(
            ["lastTransitionTime", "message", "reason", "status", "type"]
                .map(String::from)
                .to_vec(),
        ),
        ..typed("object")
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    fn crd() -> Value {
        serde_json::to_value(appwrapper_crd()).unwrap_or_default()
    }

    fn schema() -> Value {
        crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    }

    fn at<'v>(value: &'v Value, pointer: &str) -> &'v Value {
        value.pointer(pointer).unwrap_or(&Value::Null)
    }

    #[test]
    fn identity_scope_and_names() {
        let crd = crd();
        assert_eq!(
            crd["metadata"]["name"],
            json!("appwrappers.workload.codeflare.dev")
        );
        assert_eq!(crd["spec"]["group"], json!("workload.codeflare.dev"));
        assert_eq!(crd["spec"]["scope"], json!("Namespaced"));
        assert_eq!(crd["spec"]["names"]["kind"], json!("AppWrapper"));
        assert_eq!(crd["spec"]["names"]["plural"], json!("appwrappers"));
        assert_eq!(crd["spec"]["names"]["singular"], json!("appwrapper"));
        assert_eq!(crd["spec"]["names"]["shortNames"], json!(["aw"]));
        let list_kind = &crd["spec"]["names"]["listKind"];
        assert!(list_kind.is_null() || *list_kind == json!("AppWrapperList"));
    }

    #[test]
    fn one_served_storage_version_with_status_subresource_only() {
        let crd = crd();
        let versions = crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(versions.len(), 1);
        assert_eq!(versions[0]["name"], json!("v1beta2"));
        assert_eq!(versions[0]["served"], json!(true));
        assert_eq!(versions[0]["storage"], json!(true));
        assert_eq!(versions[0]["subresources"], json!({"status": {}}));
    }

    #[test]
    fn printer_columns_in_reference_order() {
        let columns = crd()["spec"]["versions"][0]["additionalPrinterColumns"].clone();
        let summary: Vec<(Value, Value, Value)> = columns
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c["name"].clone(), c["type"].clone(), c["jsonPath"].clone()))
            .collect();
        let expected = [
            ("Status", "string", ".status.phase"),
            (
                "Quota Reserved",
                "string",
                r#".status.conditions[?(@.type=="QuotaReserved")].status"#,
            ),
            (
                "Resources Deployed",
                "string",
                r#".status.conditions[?(@.type=="ResourcesDeployed")].status"#,
            ),
            (
                "Unhealthy",
                "string",
                r#".status.conditions[?(@.type=="Unhealthy")].status"#,
            ),
            ("Age", "date", ".metadata.creationTimestamp"),
        ]
        .map(|(n, t, p)| (json!(n), json!(t), json!(p)));
        assert_eq!(summary, expected.to_vec());
    }

    #[rstest]
    #[case::root("", None)]
    #[case::spec("/properties/spec", Some(json!(["components"])))]
    #[case::component("/properties/spec/properties/components/items", Some(json!(["template"])))]
    #[case::declared_pod_set("/properties/spec/properties/components/items/properties/podSets/items", Some(json!(["path"])))]
    #[case::scheduling_gate("/properties/spec/properties/components/items/properties/podSetInfos/items/properties/schedulingGates/items", Some(json!(["name"])))]
    #[case::status("/properties/status", None)]
    #[case::component_status("/properties/status/properties/componentStatus/items", Some(json!(["apiVersion", "kind", "name", "podSets"])))]
    #[case::status_pod_set("/properties/status/properties/componentStatus/items/properties/podSets/items", Some(json!(["path"])))]
    #[case::condition("/properties/status/properties/conditions/items", Some(json!(["lastTransitionTime", "message", "reason", "status", "type"])))]
    #[case::component_condition("/properties/status/properties/componentStatus/items/properties/conditions/items",
        Some(json!(["lastTransitionTime", "message", "reason", "status", "type"])))]
    fn required_fields(#[case] pointer: &str, #[case] required: Option<Value>) {
        let schema = schema();
        let node = at(&schema, pointer);
        assert_eq!(node["type"], json!("object"), "{pointer} is an object");
        let mut found = node.get("required").cloned();
        if let Some(Value::Array(list)) = found.as_mut() {
            list.sort_by_key(|v| v.as_str().map(String::from));
        }
        assert_eq!(found, required, "required at {pointer}");
    }

    #[test]
    fn templates_are_embedded_resources_preserving_unknown_fields() {
        let schema = schema();
        let mut template = at(
            &schema,
            "/properties/spec/properties/components/items/properties/template",
        )
        .clone();
        template.as_object_mut().map(|t| t.remove("description"));
        assert_eq!(
            template,
            json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true})
        );
    }

    #[rstest]
    #[case::appwrapper("/properties/status/properties/conditions")]
    #[case::component("/properties/status/properties/componentStatus/items/properties/conditions")]
    fn conditions_are_list_maps_keyed_by_type_with_validation(#[case] pointer: &str) {
        let schema = schema();
        let list = at(&schema, pointer);
        assert_eq!(list["x-kubernetes-list-type"], json!("map"));
        assert_eq!(list["x-kubernetes-list-map-keys"], json!(["type"]));
        let item = &list["items"]["properties"];
        assert_eq!(item["status"]["enum"], json!(["True", "False", "Unknown"]));
        assert_eq!(
            item["reason"]["pattern"],
            json!("^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
        );
        assert_eq!(item["reason"]["minLength"], json!(1));
        assert_eq!(item["message"]["maxLength"], json!(32768));
        assert_eq!(item["lastTransitionTime"]["format"], json!("date-time"));
    }

    #[rstest]
    #[case::phase("/properties/status/properties/phase", "string", None)]
    #[case::resetting_count(
        "/properties/status/properties/resettingCount",
        "integer",
        Some("int32")
    )]
    #[case::replicas(
        "/properties/spec/properties/components/items/properties/podSets/items/properties/replicas",
        "integer",
        Some("int32")
    )]
    #[case::suspend("/properties/spec/properties/suspend", "boolean", None)]
    #[case::managed_by("/properties/spec/properties/managedBy", "string", None)]
    #[case::toleration_seconds(
        "/properties/spec/properties/components/items/properties/podSetInfos/items/properties/tolerations/items/properties/tolerationSeconds",
        "integer",
        Some("int64")
    )]
    fn scalar_fields(#[case] pointer: &str, #[case] type_: &str, #[case] format: Option<&str>) {
        let schema = schema();
        let node = at(&schema, pointer);
        assert_eq!(node["type"], json!(type_));
        assert_eq!(node.get("format").and_then(Value::as_str), format);
        assert!(node.get("enum").is_none(), "{pointer} has no enum");
    }

    /// The rules of a structural schema that kube-apiserver enforces, plus the reference's
    /// choice of never using `nullable`.
    fn structural_violations(node: &Value, at: &str, out: &mut Vec<String>) {
        let Some(map) = node.as_object() else { return };
        for forbidden in [
            "$ref",
            "nullable",
            "anyOf",
            "oneOf",
            "allOf",
            "not",
            "definitions",
            "additionalItems",
        ] {
            if map.contains_key(forbidden) {
                out.push(format!("{at}: {forbidden}"));
            }
        }
        let untyped_ok = map.get("x-kubernetes-int-or-string") == Some(&json!(true))
            || map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
        let typed = map
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        if !typed && !untyped_ok {
            out.push(format!("{at}: no type"));
        }
        if map.contains_key("properties") && map.contains_key("additionalProperties") {
            out.push(format!("{at}: properties and additionalProperties"));
        }
        for (name, child) in map
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            structural_violations(child, &format!("{at}.{name}"), out);
        }
        if let Some(items) = map.get("items") {
            structural_violations(items, &format!("{at}[]"), out);
        }
        if let Some(values) = map.get("additionalProperties").filter(|v| v.is_object()) {
            structural_violations(values, &format!("{at}{{}}"), out);
        }
    }

    #[test]
    fn schema_is_structural() {
        let mut violations = vec![];
        structural_violations(&schema(), "", &mut violations);
        assert_eq!(violations, Vec::<String>::new());
    }

    #[test]
    fn root_declares_type_meta_and_metadata_only_as_plain_types() {
        let schema = schema();
        assert_eq!(
            schema["properties"]["apiVersion"],
            json!({"type": "string"})
        );
        assert_eq!(schema["properties"]["kind"], json!({"type": "string"}));
        assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    }

    #[test]
    fn a_full_appwrapper_deserializes_and_round_trips_status() {
        let aw = json!({
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "metadata": {"name": "aw", "namespace": "ns"},
            "spec": {"components": [{"template": {"apiVersion": "v1", "kind": "Pod"}}]},
            "status": {"phase": "", "componentStatus": [{"name": "", "kind": "", "apiVersion": "", "podSets": []}]}
        });
        let parsed: Result<AppWrapper, _> = serde_json::from_value(aw);
        let status = parsed
            .ok()
            .and_then(|aw| aw.status)
            .and_then(|s| serde_json::to_value(s).ok());
        assert_eq!(
            status,
            Some(
                json!({"componentStatus": [{"name": "", "kind": "", "apiVersion": "", "podSets": []}]})
            )
        );
    }
}
