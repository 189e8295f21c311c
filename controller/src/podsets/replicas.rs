//! Reading replica counts from templates (§5.3) and the replicas default (§5.6).
//! Only JSON integers are integers (§0.6); values are truncated to int32 like the reference.

use serde_json::Value;

use super::PodSetError;
use super::gofmt::go_sprint;
use super::path::{resolve, resolve_map};
use crate::api::AppWrapperPodSet;

/// A PodSet's replica count: absent means 1.
pub fn replicas(pod_set: &AppWrapperPodSet) -> i32 {
    pod_set.replicas.unwrap_or(1)
}

/// The integer at `path`, or `None` when the path is missing or the value is not an integer.
pub fn optional_int(template: &Value, path: &str) -> Option<i32> {
    resolve(template, path)
        .ok()
        .and_then(Value::as_i64)
        .map(truncate)
}

/// The replica count at `path` for inference: an empty path, a missing field or `null` mean 1;
/// the parent must be a map and the value, when present, an integer.
pub fn inferred_replicas(template: &Value, path: &str) -> Result<i32, PodSetError> {
    if path.is_empty() {
        return Ok(1);
    }
    let (parent, field) = match path.rfind('.') {
        Some(dot) => (resolve_map(template, &path[..dot])?, &path[dot + 1..]),
        None => (
            template
                .as_object()
                .ok_or_else(|| non_int(path, template))?,
            path,
        ),
    };
    match parent.get(field) {
        None | Some(Value::Null) => Ok(1),
        Some(value) => value
            .as_i64()
            .map(truncate)
            .ok_or_else(|| non_int(path, value)),
    }
}

fn non_int(path: &str, value: &Value) -> PodSetError {
    PodSetError::NonIntReplicas {
        path: path.to_string(),
        value: go_sprint(value),
    }
}

fn truncate(value: i64) -> i32 {
    // Go's int32(v): keep the low 32 bits.
    value as i32
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn job(spec: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": spec})
    }

    #[rstest]
    #[case::int(json!({"parallelism": 4}), Some(4))]
    #[case::zero(json!({"parallelism": 0}), Some(0))]
    #[case::float(json!({"parallelism": 4.0}), None)]
    #[case::string(json!({"parallelism": "4"}), None)]
    #[case::null(json!({"parallelism": null}), None)]
    #[case::missing(json!({}), None)]
    #[case::truncated(json!({"parallelism": 4294967297i64}), Some(1))]
    fn optional_int_reads_only_integers(#[case] spec: Value, #[case] expected: Option<i32>) {
        assert_eq!(
            optional_int(&job(spec), "template.spec.parallelism"),
            expected
        );
    }

    #[rstest]
    #[case::int(json!({"replicas": 3}), Ok(3))]
    #[case::missing(json!({}), Ok(1))]
    #[case::null(json!({"replicas": null}), Ok(1))]
    #[case::negative(json!({"replicas": -2}), Ok(-2))]
    #[case::float(json!({"replicas": 2.0}), Err("at path position 'template.spec.replicas' non-int value 2".to_string()))]
    #[case::fraction(json!({"replicas": 2.5}), Err("at path position 'template.spec.replicas' non-int value 2.5".to_string()))]
    #[case::string(json!({"replicas": "3"}), Err("at path position 'template.spec.replicas' non-int value 3".to_string()))]
    #[case::bool(json!({"replicas": true}), Err("at path position 'template.spec.replicas' non-int value true".to_string()))]
    fn inferred_replicas_defaults_and_rejects(
        #[case] spec: Value,
        #[case] expected: Result<i32, String>,
    ) {
        let got =
            inferred_replicas(&job(spec), "template.spec.replicas").map_err(|e| e.to_string());
        assert_eq!(got, expected);
    }

    #[test]
    fn inferred_replicas_needs_a_map_parent() {
        let template = job(json!("not a map"));
        assert_eq!(
            inferred_replicas(&template, "template.spec.replicas").map_err(|e| e.to_string()),
            Err("at path position 'template.spec' non-map value".to_string())
        );
        assert_eq!(
            inferred_replicas(&job(json!({})), "template.nothing.replicas")
                .map_err(|e| e.to_string()),
            Err("at path position 'template.' missing field 'nothing'".to_string())
        );
    }

    #[test]
    fn empty_path_means_one() {
        assert_eq!(inferred_replicas(&json!({}), ""), Ok(1));
    }

    #[rstest]
    #[case(None, 1)]
    #[case(Some(0), 0)]
    #[case(Some(5), 5)]
    fn replicas_default_to_one(#[case] declared: Option<i32>, #[case] expected: i32) {
        let pod_set = AppWrapperPodSet {
            replicas: declared,
            ..Default::default()
        };
        assert_eq!(replicas(&pod_set), expected);
    }
}
