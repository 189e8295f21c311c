//! A configuration document laid over a filled-in configuration the way Go's `json.Unmarshal`
//! fills the reference's `OperatorConfig`, which already holds the defaults: objects merge
//! field by field, map keys merge, anything else is replaced, `null` clears only pointers, maps
//! and slices, field names match regardless of case, and unknown fields are ignored.

use serde_json::{Map, Value};

/// Go map fields: their keys are data (matched exactly) and each entry is replaced whole.
const MAPS: &[&str] = &["appwrapper.autopilot.resourceTaints"];

/// Go pointer, map and slice fields, which `null` clears. `null` leaves every other field as it
/// was.
const NULLABLE: &[&str] = &[
    "appwrapper",
    "certManagement",
    "controllerManager",
    "webhooksEnabled",
    "appwrapper.autopilot",
    "appwrapper.faultTolerance",
    "appwrapper.autopilot.resourceTaints",
    "appwrapper.autopilot.preferNoScheduleWeight",
];

/// Lays `document` over `base`, the serialized configuration. A `null` document changes
/// nothing; a document that is not an object replaces `base` (and fails to decode).
pub fn overlay(base: &mut Value, document: Value) {
    match (base, document) {
        (_, Value::Null) => {}
        (Value::Object(base), Value::Object(document)) => merge_struct(base, document, ""),
        (base, document) => *base = document,
    }
}

fn merge_struct(base: &mut Map<String, Value>, document: Map<String, Value>, path: &str) {
    for (key, value) in document {
        let Some(field) = field_name(base, &key) else {
            continue;
        };
        let field_path = if path.is_empty() {
            field.clone()
        } else {
            format!("{path}.{field}")
        };
        if let Some(slot) = base.get_mut(&field) {
            merge_field(slot, value, &field_path);
        }
    }
}

fn merge_field(slot: &mut Value, value: Value, path: &str) {
    match value {
        Value::Null if NULLABLE.contains(&path) => *slot = Value::Null,
        Value::Null => {}
        Value::Object(document) if slot.is_object() => {
            let Value::Object(base) = slot else {
                return;
            };
            if MAPS.contains(&path) {
                base.extend(document);
            } else {
                merge_struct(base, document, path);
            }
        }
        value => *slot = value,
    }
}

/// The field a document key sets: the exact name, else one equal to it ignoring ASCII case.
fn field_name(fields: &Map<String, Value>, key: &str) -> Option<String> {
    if fields.contains_key(key) {
        return Some(key.to_owned());
    }
    fields.keys().find(|f| f.eq_ignore_ascii_case(key)).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "appwrapper": {
                "autopilot": {
                    "monitorNodes": true,
                    "resourceTaints": {"nvidia.com/gpu": [{"value": "EVICT"}]},
                    "preferNoScheduleWeight": 50,
                },
                "faultTolerance": {"retryLimit": 3, "resetPause": 90},
                "schedulerName": "",
            },
            "controllerManager": {"metrics": {"bindAddress": ":8443"}, "leaderElection": false},
            "webhooksEnabled": true,
        })
    }

    /// `base()` with the value at each JSON pointer replaced.
    fn base_with(changes: &[(&str, Value)]) -> Value {
        let mut expected = base();
        for (pointer, value) in changes {
            *expected.pointer_mut(pointer).expect(pointer) = value.clone();
        }
        expected
    }

    #[rstest]
    #[case::nothing(json!(null), &[])]
    #[case::empty_object(json!({}), &[])]
    #[case::nested_fields_merge(
        json!({"appwrapper": {"faultTolerance": {"retryLimit": 1}}}),
        &[("/appwrapper/faultTolerance/retryLimit", json!(1))]
    )]
    #[case::map_keys_merge(
        json!({"appwrapper": {"autopilot": {"resourceTaints": {"example.com/fpga": [{"value": "BAD"}]}}}}),
        &[("/appwrapper/autopilot/resourceTaints", json!({
            "nvidia.com/gpu": [{"value": "EVICT"}],
            "example.com/fpga": [{"value": "BAD"}],
        }))]
    )]
    #[case::a_map_entry_is_replaced_whole(
        json!({"appwrapper": {"autopilot": {"resourceTaints": {"nvidia.com/gpu": [{"value": "WARN"}, {"value": "TESTING"}]}}}}),
        &[("/appwrapper/autopilot/resourceTaints/nvidia.com~1gpu", json!([{"value": "WARN"}, {"value": "TESTING"}]))]
    )]
    #[case::an_empty_list_neutralises_a_default_entry(
        json!({"appwrapper": {"autopilot": {"resourceTaints": {"nvidia.com/gpu": []}}}}),
        &[("/appwrapper/autopilot/resourceTaints/nvidia.com~1gpu", json!([]))]
    )]
    #[case::a_null_map_entry_is_kept_as_null(
        json!({"appwrapper": {"autopilot": {"resourceTaints": {"nvidia.com/gpu": null}}}}),
        &[("/appwrapper/autopilot/resourceTaints/nvidia.com~1gpu", json!(null))]
    )]
    #[case::map_keys_keep_their_case(
        json!({"appwrapper": {"autopilot": {"resourceTaints": {"NVIDIA.com/gpu": []}}}}),
        &[("/appwrapper/autopilot/resourceTaints", json!({
            "nvidia.com/gpu": [{"value": "EVICT"}],
            "NVIDIA.com/gpu": [],
        }))]
    )]
    #[case::null_clears_a_pointer(
        json!({"appwrapper": {"autopilot": null}}),
        &[("/appwrapper/autopilot", json!(null))]
    )]
    #[case::null_clears_a_map(
        json!({"appwrapper": {"autopilot": {"resourceTaints": null}}}),
        &[("/appwrapper/autopilot/resourceTaints", json!(null))]
    )]
    #[case::null_clears_a_pointer_to_a_number(
        json!({"appwrapper": {"autopilot": {"preferNoScheduleWeight": null}}}),
        &[("/appwrapper/autopilot/preferNoScheduleWeight", json!(null))]
    )]
    #[case::null_clears_a_pointer_to_a_bool(
        json!({"webhooksEnabled": null}),
        &[("/webhooksEnabled", json!(null))]
    )]
    #[case::null_leaves_a_value_field(
        json!({"appwrapper": {"schedulerName": null, "faultTolerance": {"retryLimit": null}}}),
        &[]
    )]
    #[case::null_leaves_a_struct_value_field(
        json!({"controllerManager": {"metrics": null}}),
        &[]
    )]
    #[case::field_names_ignore_case(
        json!({"AppWrapper": {"FaultTolerance": {"RETRYLIMIT": 7}}, "WebhooksEnabled": false}),
        &[("/appwrapper/faultTolerance/retryLimit", json!(7)), ("/webhooksEnabled", json!(false))]
    )]
    #[case::unknown_fields_are_ignored(
        json!({"appwrapper": {"enableKueueIntegrations": true}, "other": 1}),
        &[]
    )]
    #[case::a_scalar_replaces_an_object(
        json!({"appwrapper": {"faultTolerance": 5}}),
        &[("/appwrapper/faultTolerance", json!(5))]
    )]
    fn lays_a_document_over_the_defaults_as_go_json_does(
        #[case] document: Value,
        #[case] changes: &[(&str, Value)],
    ) {
        let mut merged = base();
        overlay(&mut merged, document);
        assert_eq!(merged, base_with(changes));
    }

    #[test]
    fn a_document_that_is_not_an_object_replaces_everything() {
        let mut merged = base();
        overlay(&mut merged, json!([1]));
        assert_eq!(merged, json!([1]));
    }
}
