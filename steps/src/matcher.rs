//! Partial matching of an object against expected YAML, in the spirit of an observer schema:
//! only the listed fields are compared.
//!
//! - Maps compare only the listed keys.
//! - Lists whose expected items all carry a `type` (conditions) or a `name` (containers,
//!   components with names) are matched by that key, in any order; other lists match when every
//!   expected item matches a distinct actual item, in any order. The length is not compared.
//! - `{$length: N}` in place of a list (or map) checks its length; `{$length: N, $items: [...]}`
//!   checks both.
//! - Scalars compare by value; a number and its decimal string are equal (`"1"` vs `1`).
//! - Operators, as strings: `$absent` (the key must be missing or null), `$present` (any
//!   value), `$regex:<re>` (a string matching the regex), `$gte:<n>`, `$lte:<n>`, `$gt:<n>`,
//!   `$lt:<n>` (numeric comparison).

use serde_json::{Map, Value};

/// One difference between the expected and the actual object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Where, as `.status.conditions[type=Ready].status`.
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

/// All the mismatches of `actual` against `expected`; empty means it matches.
pub fn mismatches(expected: &Value, actual: &Value) -> Vec<Mismatch> {
    let mut out = Vec::new();
    compare("", expected, Some(actual), &mut out);
    out
}

pub fn matches(expected: &Value, actual: &Value) -> bool {
    mismatches(expected, actual).is_empty()
}

const KEYS: [&str; 2] = ["type", "name"];

fn compare(path: &str, expected: &Value, actual: Option<&Value>, out: &mut Vec<Mismatch>) {
    let mut fail = |message: String| {
        out.push(Mismatch {
            path: path.to_string(),
            message,
        })
    };
    if let Some(op) = expected.as_str().and_then(|s| s.strip_prefix('$')) {
        if let Some(message) = operator(op, actual) {
            fail(message);
        }
        return;
    }
    let Some(actual) = actual.filter(|a| !a.is_null() || expected.is_null()) else {
        fail(format!("missing, expected {}", short(expected)));
        return;
    };
    match expected {
        Value::Object(map) if map.contains_key("$length") || map.contains_key("$items") => {
            compare_length(path, map, actual, out)
        }
        Value::Object(map) => match actual.as_object() {
            Some(actual) => {
                for (key, value) in map {
                    compare(&format!("{path}.{key}"), value, actual.get(key), out);
                }
            }
            None => fail(format!("expected a map, found {}", short(actual))),
        },
        Value::Array(items) => match actual.as_array() {
            Some(actual) => compare_list(path, items, actual, out),
            None => fail(format!("expected a list, found {}", short(actual))),
        },
        scalar => {
            if !scalar_eq(scalar, actual) {
                fail(format!(
                    "expected {}, found {}",
                    short(scalar),
                    short(actual)
                ));
            }
        }
    }
}

fn operator(op: &str, actual: Option<&Value>) -> Option<String> {
    let present = actual.is_some_and(|a| !a.is_null());
    let (name, arg) = op.split_once(':').unwrap_or((op, ""));
    match name {
        "absent" => actual
            .filter(|a| !a.is_null())
            .map(|a| format!("expected absent, found {}", short(a))),
        "present" | "any" => (!present).then(|| "missing, expected a value".to_string()),
        "regex" => {
            let text = actual.map(text_of).unwrap_or_default();
            match regex::Regex::new(arg) {
                Ok(re) if present && re.is_match(&text) => None,
                Ok(_) => Some(format!("expected to match /{arg}/, found {text:?}")),
                Err(e) => Some(format!("bad regex {arg:?}: {e}")),
            }
        }
        "gte" | "lte" | "gt" | "lt" => {
            let bound: f64 = match arg.trim().parse() {
                Ok(b) => b,
                Err(_) => return Some(format!("bad number in ${op}")),
            };
            let value = actual.and_then(number_of);
            let ok = value.is_some_and(|v| match name {
                "gte" => v >= bound,
                "lte" => v <= bound,
                "gt" => v > bound,
                _ => v < bound,
            });
            (!ok).then(|| {
                format!(
                    "expected {name} {arg}, found {}",
                    actual.map(short).unwrap_or_else(|| "nothing".into())
                )
            })
        }
        _ => {
            // Not an operator: a literal string that starts with `$`.
            let literal = Value::String(format!("${op}"));
            match actual {
                Some(a) if scalar_eq(&literal, a) => None,
                Some(a) => Some(format!("expected {}, found {}", short(&literal), short(a))),
                None => Some(format!("missing, expected {}", short(&literal))),
            }
        }
    }
}

fn compare_length(path: &str, map: &Map<String, Value>, actual: &Value, out: &mut Vec<Mismatch>) {
    let len = match actual {
        Value::Array(a) => Some(a.len()),
        Value::Object(o) => Some(o.len()),
        _ => None,
    };
    if let Some(expected) = map.get("$length") {
        let ok = expected
            .as_u64()
            .zip(len)
            .is_some_and(|(e, l)| e as usize == l);
        if !ok {
            out.push(Mismatch {
                path: path.to_string(),
                message: format!(
                    "expected length {}, found {}",
                    short(expected),
                    len.map_or_else(|| short(actual), |l| l.to_string())
                ),
            });
        }
    }
    if let Some(items) = map.get("$items") {
        compare(path, items, Some(actual), out);
    }
}

/// The key to match list items by, if every expected item is a map carrying it.
fn list_key(items: &[Value]) -> Option<&'static str> {
    KEYS.into_iter().find(|key| {
        !items.is_empty()
            && items
                .iter()
                .all(|i| i.get(key).is_some_and(|v| v.is_string()))
    })
}

fn compare_list(path: &str, expected: &[Value], actual: &[Value], out: &mut Vec<Mismatch>) {
    if let Some(key) = list_key(expected) {
        for item in expected {
            let id = item.get(key).and_then(Value::as_str).unwrap_or_default();
            let item_path = format!("{path}[{key}={id}]");
            let found = actual
                .iter()
                .find(|a| a.get(key).and_then(Value::as_str) == Some(id));
            match found {
                Some(a) => compare(&item_path, item, Some(a), out),
                None => out.push(Mismatch {
                    path: item_path,
                    message: format!("no item with {key} {id:?}"),
                }),
            }
        }
        return;
    }
    let mut used = vec![false; actual.len()];
    for (i, item) in expected.iter().enumerate() {
        let found = actual
            .iter()
            .enumerate()
            .find(|(j, a)| !used[*j] && matches(item, a));
        match found {
            Some((j, _)) => used[j] = true,
            None => {
                // Explain against the item at the same index, when there is one.
                let before = out.len();
                if let Some(a) = actual.get(i) {
                    compare(&format!("{path}[{i}]"), item, Some(a), out);
                }
                if out.len() == before {
                    out.push(Mismatch {
                        path: format!("{path}[{i}]"),
                        message: format!("no item matches {}", short(item)),
                    });
                }
            }
        }
    }
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn scalar_eq(expected: &Value, actual: &Value) -> bool {
    if expected == actual {
        return true;
    }
    match (expected, actual) {
        (Value::Number(_), Value::String(_)) | (Value::String(_), Value::Number(_)) => {
            text_of(expected) == text_of(actual)
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => false,
    }
}

fn short(value: &Value) -> String {
    let text = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

/// `actual` cut down to the shape of `expected`, so that a diff shows only listed fields.
pub fn project(expected: &Value, actual: &Value) -> Value {
    match (expected, actual) {
        (Value::Object(e), _) if e.contains_key("$length") || e.contains_key("$items") => {
            let mut out = Map::new();
            if e.contains_key("$length") {
                let len = match actual {
                    Value::Array(a) => Value::from(a.len()),
                    Value::Object(o) => Value::from(o.len()),
                    other => other.clone(),
                };
                out.insert("$length".into(), len);
            }
            if let Some(items) = e.get("$items") {
                out.insert("$items".into(), project(items, actual));
            }
            Value::Object(out)
        }
        (Value::Object(e), Value::Object(a)) => Value::Object(
            e.iter()
                .filter_map(|(k, v)| a.get(k).map(|av| (k.clone(), project(v, av))))
                .collect(),
        ),
        (Value::Array(e), Value::Array(a)) => {
            if let Some(key) = list_key(e) {
                Value::Array(
                    e.iter()
                        .filter_map(|item| {
                            let id = item.get(key)?;
                            let found = a.iter().find(|x| x.get(key) == Some(id))?;
                            Some(project(item, found))
                        })
                        .collect(),
                )
            } else {
                let mut used = vec![false; a.len()];
                Value::Array(
                    e.iter()
                        .enumerate()
                        .filter_map(|(i, item)| {
                            let j = (0..a.len())
                                .find(|j| !used[*j] && matches(item, &a[*j]))
                                .or_else(|| (i < a.len() && !used[i]).then_some(i))?;
                            used[j] = true;
                            Some(project(item, &a[j]))
                        })
                        .collect(),
                )
            }
        }
        _ => actual.clone(),
    }
}

/// A failure report: the mismatches and a unified diff of expected vs. the projected actual.
pub fn explain(expected: &Value, actual: &Value) -> String {
    let found = mismatches(expected, actual);
    if found.is_empty() {
        return "matches".into();
    }
    let list: Vec<String> = found.iter().map(|m| format!("  - {m}")).collect();
    let want = crate::yaml::render(expected);
    let got = crate::yaml::render(&project(expected, actual));
    let diff = similar::TextDiff::from_lines(&want, &got)
        .unified_diff()
        .header("expected", "actual (listed fields only)")
        .to_string();
    format!("mismatches:\n{}\ndiff:\n{diff}", list.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse;
    use rstest::rstest;
    use serde_json::json;

    fn object() -> Value {
        json!({
            "metadata": {"name": "aw", "labels": {"a": "1", "b": "2"}, "finalizers": ["f1", "f2"]},
            "status": {
                "phase": "Running",
                "resettingCount": 2,
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "Resuming"},
                    {"type": "ResourcesDeployed", "status": "True", "reason": "Resuming"},
                    {"type": "Unhealthy", "status": "False", "reason": "FoundNoFailedPods"},
                ],
            },
            "spec": {"components": [{"podSetInfos": [{"nodeSelector": {"type": "kwok"}}]}]},
        })
    }

    #[rstest]
    #[case("status: {phase: Running}")]
    #[case("metadata: {labels: {b: '2'}}")]
    #[case("metadata: {finalizers: [f2]}")]
    #[case(
        "status: {conditions: [{type: Unhealthy, status: 'False'}, {type: QuotaReserved, status: 'True'}]}"
    )]
    #[case("status: {resettingCount: '2'}")]
    #[case("status: {resettingCount: $gte:2}")]
    #[case("status: {resettingCount: $lt:3}")]
    #[case("status: {phase: '$regex:^Run'}")]
    #[case("metadata: {deletionTimestamp: $absent}")]
    #[case("metadata: {name: $present}")]
    #[case("spec: {components: [{podSetInfos: {$length: 1}}]}")]
    #[case(
        "spec: {components: [{podSetInfos: {$length: 1, $items: [{nodeSelector: {type: kwok}}]}}]}"
    )]
    #[case("metadata: {labels: {$length: 2}}")]
    fn listed_fields_match(#[case] expected: &str) {
        let expected = parse(expected).unwrap();
        assert_eq!(mismatches(&expected, &object()), vec![], "{expected}");
    }

    #[rstest]
    #[case("status: {phase: Failed}", ".status.phase")]
    #[case("metadata: {labels: {c: '3'}}", ".metadata.labels.c")]
    #[case("metadata: {finalizers: [f3]}", ".metadata.finalizers[0]")]
    #[case(
        "status: {conditions: [{type: PodsReady, status: 'True'}]}",
        ".status.conditions[type=PodsReady]"
    )]
    #[case(
        "status: {conditions: [{type: Unhealthy, status: 'True'}]}",
        ".status.conditions[type=Unhealthy].status"
    )]
    #[case("status: {resettingCount: $gt:2}", ".status.resettingCount")]
    #[case("metadata: {name: $absent}", ".metadata.name")]
    #[case(
        "spec: {components: [{podSetInfos: {$length: 2}}]}",
        ".spec.components[0].podSetInfos"
    )]
    #[case("status: {phase: [Running]}", ".status.phase")]
    fn a_difference_is_reported_at_its_path(#[case] expected: &str, #[case] path: &str) {
        let expected = parse(expected).unwrap();
        let found = mismatches(&expected, &object());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, path);
    }

    #[test]
    fn unordered_lists_need_distinct_matches() {
        let actual = json!([{"k": 1}, {"k": 2}]);
        assert!(matches(&json!([{"k": 2}, {"k": 1}]), &actual));
        assert!(!matches(&json!([{"k": 1}, {"k": 1}]), &actual));
    }

    #[test]
    fn explanation_shows_the_mismatch_and_a_diff_of_listed_fields_only() {
        let expected = parse("status:\n  phase: Failed\n  conditions:\n  - type: QuotaReserved\n    status: 'False'\n").unwrap();
        let text = explain(&expected, &object());
        assert!(
            text.contains(".status.phase: expected \"Failed\", found \"Running\""),
            "{text}"
        );
        assert!(text.contains("-  phase: Failed"), "{text}");
        assert!(text.contains("+  phase: Running"), "{text}");
        assert!(!text.contains("resettingCount"), "{text}");
        assert!(!text.contains("Unhealthy"), "{text}");
    }

    #[test]
    fn a_literal_dollar_string_compares_as_text() {
        assert!(matches(&json!({"a": "$5"}), &json!({"a": "$5"})));
        assert!(!matches(&json!({"a": "$5"}), &json!({"a": "5"})));
    }
}
