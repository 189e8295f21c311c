//! The "refers to a PodSpecTemplate" check (§5.2).

use serde_json::Value;

use super::path::{PathError, resolve_map};
use super::podspec::{PodSpecError, check_pod_spec};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodTemplateError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("content at {path} does not contain a spec")]
    NoSpec { path: String },
    #[error("content at {path}.spec not parseable as a v1.PodSpec: {source}")]
    NotAPodSpec { path: String, source: PodSpecError },
}

/// Succeeds iff `path` resolves to a map whose `spec` converts strictly to a PodSpec.
/// `metadata` and any sibling of `spec` (a Pod's `status`, say) are not looked at.
pub fn check_pod_template(template: &Value, path: &str) -> Result<(), PodTemplateError> {
    let candidate = resolve_map(template, path)?;
    let spec = candidate
        .get("spec")
        .filter(|spec| spec.is_object())
        .ok_or_else(|| PodTemplateError::NoSpec {
            path: path.to_string(),
        })?;
    check_pod_spec(spec).map_err(|source| PodTemplateError::NotAPodSpec {
        path: path.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "replicas": 2,
                "template": {
                    "metadata": {"labels": {"app": "d", "n": 3}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}
                },
                "notATemplate": {"spec": "x"},
                "emptySpec": {"spec": {}},
                "badSpec": {"spec": {"containers": [{"nam": "c"}]}},
                "podLike": {"spec": {"containers": []}, "status": {"phase": "Running"}}
            }
        })
    }

    #[rstest]
    #[case::pod_template("template.spec.template")]
    #[case::empty_spec("template.spec.emptySpec")]
    #[case::status_sibling_ignored("template.spec.podLike")]
    fn accepts_pod_templates(#[case] path: &str) {
        assert_eq!(check_pod_template(&deployment(), path), Ok(()));
    }

    #[rstest]
    #[case::whole_deployment(
        "template",
        "content at template.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"badSpec\", unknown field \"emptySpec\", unknown field \"notATemplate\", unknown field \"podLike\", unknown field \"replicas\", unknown field \"template\""
    )]
    #[case::spec_not_a_map(
        "template.spec.notATemplate",
        "content at template.spec.notATemplate does not contain a spec"
    )]
    #[case::no_spec(
        "template.metadata",
        "content at template.metadata does not contain a spec"
    )]
    #[case::unknown_field(
        "template.spec.badSpec",
        "content at template.spec.badSpec.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"containers[0].nam\""
    )]
    #[case::not_a_map(
        "template.spec.replicas",
        "at path position 'template.spec.replicas' non-map value"
    )]
    #[case::missing(
        "template.spec.nothing",
        "at path position 'template.spec.' missing field 'nothing'"
    )]
    fn rejects_everything_else(#[case] path: &str, #[case] message: &str) {
        assert_eq!(
            check_pod_template(&deployment(), path).map_err(|e| e.to_string()),
            Err(message.to_string())
        );
    }
}
