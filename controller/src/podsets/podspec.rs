//! Strict conversion check of untyped JSON to a `core/v1.PodSpec` (§5.2), equivalent to the
//! reference's `FromUnstructuredWithValidation(spec, &PodSpec{}, true)`.
//!
//! The shape of PodSpec comes from k8s-openapi's JSON schema. Conversion rules of the
//! reference: `null` is accepted anywhere; strings, booleans, integers (a float is accepted
//! when it has no fractional part) and numbers must have their JSON type; objects must not
//! have unknown fields; quantities and int-or-strings use their own JSON decoders. The first
//! type error aborts; unknown fields are collected and reported together, sorted.

use std::sync::LazyLock;

use k8s_openapi::api::core::v1::PodSpec;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::quantity::parse_quantity;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodSpecError {
    #[error("{path}: {message}")]
    Type { path: String, message: String },
    #[error("strict decoding error: {}", unknown_fields(.0))]
    UnknownFields(Vec<String>),
}

fn unknown_fields(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

const DEFS_PREFIX: &str = "#/$defs/";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
const FIELDS_V1: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1";

struct Schema {
    root: Value,
    defs: Map<String, Value>,
}

static POD_SPEC: LazyLock<Schema> = LazyLock::new(|| {
    let mut root = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<PodSpec>()
        .to_value();
    let defs = match root.as_object_mut().and_then(|o| o.remove("$defs")) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    Schema { root, defs }
});

/// Checks that `spec` converts strictly to a PodSpec.
pub fn check_pod_spec(spec: &Value) -> Result<(), PodSpecError> {
    let schema = &*POD_SPEC;
    let mut checker = Checker {
        defs: &schema.defs,
        unknown: Vec::new(),
    };
    checker.check(&schema.root, spec, &mut String::new())?;
    if checker.unknown.is_empty() {
        Ok(())
    } else {
        checker.unknown.sort();
        Err(PodSpecError::UnknownFields(checker.unknown))
    }
}

struct Checker<'s> {
    defs: &'s Map<String, Value>,
    unknown: Vec<String>,
}

type Checked = Result<(), PodSpecError>;

impl<'s> Checker<'s> {
    fn check(&mut self, schema: &'s Value, value: &Value, path: &mut String) -> Checked {
        if value.is_null() {
            return Ok(());
        }
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let name = reference.strip_prefix(DEFS_PREFIX).unwrap_or(reference);
            return match name {
                QUANTITY => check_quantity(value, path),
                INT_OR_STRING => check_int_or_string(value, path),
                TIME | MICRO_TIME => check_time(value, path),
                FIELDS_V1 => Ok(()),
                _ => match self.defs.get(name) {
                    Some(def) => self.check(def, value, path),
                    None => Err(type_error(path, format!("no schema for {name}"))),
                },
            };
        }
        if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return check_int_or_string(value, path);
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => self.check_object(schema, value, path),
            Some("array") => self.check_array(schema, value, path),
            Some("string") => expect(value.is_string(), "string", value, path),
            Some("boolean") => expect(value.is_boolean(), "boolean", value, path),
            Some("integer") => expect(is_integral(value), "integer", value, path),
            Some("number") => expect(value.is_number(), "number", value, path),
            _ => Ok(()),
        }
    }

    fn check_object(&mut self, schema: &'s Value, value: &Value, path: &mut String) -> Checked {
        let Some(map) = value.as_object() else {
            return expect(false, "object", value, path);
        };
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties").filter(|s| s.is_object());
        for (key, item) in map {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            match (properties.and_then(|p| p.get(key)), additional) {
                (Some(field), _) | (None, Some(field)) => self.check(field, item, path)?,
                (None, None) if properties.is_some() => self.unknown.push(path.clone()),
                (None, None) => {}
            }
            path.truncate(len);
        }
        Ok(())
    }

    fn check_array(&mut self, schema: &'s Value, value: &Value, path: &mut String) -> Checked {
        let Some(items) = value.as_array() else {
            return expect(false, "array", value, path);
        };
        let Some(item_schema) = schema.get("items") else {
            return Ok(());
        };
        for (i, item) in items.iter().enumerate() {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            self.check(item_schema, item, path)?;
            path.truncate(len);
        }
        Ok(())
    }
}

fn is_integral(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn check_quantity(value: &Value, path: &str) -> Checked {
    match value {
        Value::Number(_) => Ok(()),
        Value::String(s) => parse_quantity(s.trim())
            .map(|_| ())
            .map_err(|e| type_error(path, e.to_string())),
        _ => expect(false, "quantity", value, path),
    }
}

fn check_int_or_string(value: &Value, path: &str) -> Checked {
    let fits = match value {
        Value::String(_) => true,
        Value::Number(n) => match n.as_i64() {
            Some(i) => i32::try_from(i).is_ok(),
            None => n.as_f64().is_some_and(|f| {
                f.fract() == 0.0 && f >= f64::from(i32::MIN) && f <= f64::from(i32::MAX)
            }),
        },
        _ => false,
    };
    expect(fits, "int32 or string", value, path)
}

fn check_time(value: &Value, path: &str) -> Checked {
    let parses = value
        .as_str()
        .is_some_and(|s| chrono::DateTime::parse_from_rfc3339(s).is_ok());
    expect(parses, "RFC 3339 time", value, path)
}

fn expect(ok: bool, wanted: &str, value: &Value, path: &str) -> Checked {
    if ok {
        Ok(())
    } else {
        Err(type_error(
            path,
            format!("cannot convert {} to {wanted}", json_type(value)),
        ))
    }
}

fn type_error(path: &str, message: String) -> PodSpecError {
    PodSpecError::Type {
        path: if path.is_empty() {
            "spec".to_string()
        } else {
            path.to_string()
        },
        message,
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "map",
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn full_spec() -> Value {
        json!({
            "containers": [{
                "name": "main",
                "image": "busybox",
                "command": ["sh", "-c", "sleep 10"],
                "resources": {"requests": {"cpu": "100m", "memory": 1.5, "nvidia.com/gpu": 2}, "limits": {"cpu": 1}},
                "ports": [{"containerPort": 80.0, "protocol": "TCP"}],
                "livenessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 10},
                "readinessProbe": {"tcpSocket": {"port": 8080}},
                "env": [{"name": "A", "value": "b"}, null]
            }],
            "restartPolicy": "Never",
            "nodeSelector": {"a": "b"},
            "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 5}],
            "volumes": [{
                "name": "scratch",
                "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {"labels": {"x": "y"}, "creationTimestamp": "2024-01-02T03:04:05Z"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
                }}
            }],
            "terminationGracePeriodSeconds": null,
            "schedulingGates": [{"name": "g"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]
            }}}
        })
    }

    #[test]
    fn accepts_a_realistic_pod_spec() {
        assert_eq!(check_pod_spec(&full_spec()), Ok(()));
    }

    #[test]
    fn accepts_an_empty_spec() {
        assert_eq!(check_pod_spec(&json!({})), Ok(()));
    }

    #[rstest]
    #[case::top_level(json!({"containers": [], "bogus": 1, "alsoBogus": true}), vec!["alsoBogus", "bogus"])]
    #[case::nested(json!({"containers": [{"name": "a", "imag": "x"}]}), vec!["containers[0].imag"])]
    #[case::deep(json!({"affinity": {"nodeAffinity": {"preferred": []}}}), vec!["affinity.nodeAffinity.preferred"])]
    #[case::case_sensitive(json!({"Containers": []}), vec!["Containers"])]
    #[case::object_meta(json!({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"metadata": {"labelz": {}}, "spec": {}}}}]}),
        vec!["volumes[0].ephemeral.volumeClaimTemplate.metadata.labelz"])]
    fn reports_unknown_fields_sorted(#[case] spec: Value, #[case] fields: Vec<&str>) {
        let fields = fields.into_iter().map(String::from).collect();
        assert_eq!(
            check_pod_spec(&spec),
            Err(PodSpecError::UnknownFields(fields))
        );
    }

    #[rstest]
    #[case::string_as_int(json!({"containers": [{"name": 5}]}), "containers[0].name")]
    #[case::int_as_string(json!({"priority": "5"}), "priority")]
    #[case::fractional_int(json!({"priority": 1.5}), "priority")]
    #[case::bool_as_string(json!({"restartPolicy": true}), "restartPolicy")]
    #[case::map_as_list(json!({"containers": {"name": "a"}}), "containers")]
    #[case::list_as_map(json!({"affinity": []}), "affinity")]
    #[case::non_string_selector(json!({"nodeSelector": {"a": 1}}), "nodeSelector.a")]
    #[case::bad_quantity(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]}), "containers[0].resources.limits.cpu")]
    #[case::bool_quantity(json!({"overhead": {"cpu": true}}), "overhead.cpu")]
    #[case::fractional_port(json!({"containers": [{"name": "a", "readinessProbe": {"tcpSocket": {"port": 1.5}}}]}), "containers[0].readinessProbe.tcpSocket.port")]
    #[case::port_out_of_range(json!({"containers": [{"name": "a", "readinessProbe": {"tcpSocket": {"port": 3000000000i64}}}]}), "containers[0].readinessProbe.tcpSocket.port")]
    #[case::bad_time(json!({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"metadata": {"creationTimestamp": "yesterday"}, "spec": {}}}}]}),
        "volumes[0].ephemeral.volumeClaimTemplate.metadata.creationTimestamp")]
    fn reports_type_errors_with_their_location(#[case] spec: Value, #[case] at: &str) {
        match check_pod_spec(&spec) {
            Err(PodSpecError::Type { path, .. }) => assert_eq!(path, at),
            other => panic!("expected a type error at {at}, got {other:?}"),
        }
    }

    #[test]
    fn a_type_error_wins_over_unknown_fields() {
        let spec = json!({"zzz": 1, "priority": "high"});
        assert!(matches!(
            check_pod_spec(&spec),
            Err(PodSpecError::Type { .. })
        ));
    }

    #[test]
    fn whole_floats_are_accepted_for_integers() {
        assert_eq!(
            check_pod_spec(&json!({"priority": 2.0, "activeDeadlineSeconds": 30})),
            Ok(())
        );
    }

    #[test]
    fn message_names_every_unknown_field() {
        let err = check_pod_spec(&json!({"b": 1, "a": 2}))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("strict decoding error: unknown field \"a\", unknown field \"b\"")
        );
    }
}
