//! YAML in and out of `serde_json::Value`, through serde-saphyr.

use anyhow::Context as _;
use serde_json::Value;

/// Parses one YAML document. An empty document is `null`.
pub fn parse(text: &str) -> anyhow::Result<Value> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_saphyr::from_str::<Value>(text).with_context(|| format!("invalid YAML:\n{text}"))
}

/// Renders a value as YAML; falls back to pretty JSON (also valid YAML) if that fails.
pub fn render(value: &Value) -> String {
    serde_saphyr::to_string(value)
        .unwrap_or_else(|_| serde_json::to_string_pretty(value).unwrap_or_default())
}

/// An object as a reader wants to see it: without `managedFields`.
pub fn render_object(object: &Value) -> String {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    render(&object)
}

/// Replaces `${namespace}`, `${queue}` and `${name}` in a scenario's YAML.
pub fn substitute(text: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(text.to_string(), |text, (key, value)| {
        text.replace(&format!("${{{key}}}"), value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_renders_round_trip() {
        let value = parse("a: 1\nb:\n- x\n- y: true\n").unwrap();
        assert_eq!(value, json!({"a": 1, "b": ["x", {"y": true}]}));
        assert_eq!(parse(&render(&value)).unwrap(), value);
        assert_eq!(parse("  \n").unwrap(), Value::Null);
        assert!(parse("a: [").is_err());
    }

    #[test]
    fn rendering_an_object_drops_managed_fields() {
        let text = render_object(&json!({"metadata": {"name": "x", "managedFields": [1]}}));
        assert!(text.contains("name: x"));
        assert!(!text.contains("managedFields"));
    }

    #[test]
    fn substitutes_variables() {
        assert_eq!(
            substitute(
                "ns: ${namespace}/${queue}",
                &[("namespace", "n1"), ("queue", "q")]
            ),
            "ns: n1/q"
        );
    }
}
