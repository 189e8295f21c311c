//! Decoding a component template as an untyped Kubernetes object (§4.2 step 1, §6.3 step 1).

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("template is not a JSON object")]
    NotAnObject,
    #[error("Object 'Kind' is missing in '{0}'")]
    MissingKind(String),
}

/// The template as a map; like the reference's unstructured decoder it requires a `kind`.
pub fn decode_template(template: &Value) -> Result<&Map<String, Value>, TemplateError> {
    let object = template.as_object().ok_or(TemplateError::NotAnObject)?;
    if kind(template).is_empty() {
        return Err(TemplateError::MissingKind(template.to_string()));
    }
    Ok(object)
}

/// `apiVersion` of a template, `""` when absent or not a string.
pub fn api_version(template: &Value) -> &str {
    template
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `kind` of a template, `""` when absent or not a string.
pub fn kind(template: &Value) -> &str {
    template
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    #[rstest]
    #[case::pod(json!({"apiVersion": "v1", "kind": "Pod"}), Ok(()))]
    #[case::no_api_version(json!({"kind": "Pod"}), Ok(()))]
    #[case::no_kind(json!({"apiVersion": "v1"}), Err(TemplateError::MissingKind(r#"{"apiVersion":"v1"}"#.into())))]
    #[case::empty_kind(json!({"kind": ""}), Err(TemplateError::MissingKind(r#"{"kind":""}"#.into())))]
    #[case::numeric_kind(json!({"kind": 3}), Err(TemplateError::MissingKind(r#"{"kind":3}"#.into())))]
    #[case::array(json!([]), Err(TemplateError::NotAnObject))]
    #[case::null(json!(null), Err(TemplateError::NotAnObject))]
    fn requires_an_object_with_a_kind(
        #[case] template: Value,
        #[case] expected: Result<(), TemplateError>,
    ) {
        assert_eq!(decode_template(&template).map(|_| ()), expected);
    }
}
