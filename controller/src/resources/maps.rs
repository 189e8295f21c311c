//! String-map utilities of the reference (§0.5) and the lenient reading of untyped maps.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::podsets::go_sprint;

pub type StringMap = BTreeMap<String, String>;

/// Union of `first` and `second`; on a shared key the value of `first` wins.
pub fn merge_keep_first(first: &StringMap, second: &StringMap) -> StringMap {
    let mut merged = second.clone();
    merged.extend(first.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("conflict for key={key}, value1={value1}, value2={value2}")]
pub struct MapConflict {
    pub key: String,
    pub value1: String,
    pub value2: String,
}

/// Fails on the first key (in key order) present in both maps with different values.
pub fn have_conflict(a: &StringMap, b: &StringMap) -> Result<(), MapConflict> {
    match a.iter().find(|(k, v)| b.get(*k).is_some_and(|w| w != *v)) {
        Some((key, value1)) => Err(MapConflict {
            key: key.clone(),
            value1: value1.clone(),
            value2: b.get(key).cloned().unwrap_or_default(),
        }),
        None => Ok(()),
    }
}

/// An untyped map read as strings: non-string values are stringified as Go's `%v` does;
/// anything that is not a map reads as empty.
pub fn to_string_map(value: Option<&Value>) -> StringMap {
    let Some(Value::Object(map)) = value else {
        return StringMap::new();
    };
    map.iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => go_sprint(other),
            };
            (k.clone(), v)
        })
        .collect()
}

pub fn to_json_map(map: &StringMap) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<String, Value>>(),
    )
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn m(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[rstest]
    #[case::first_wins(m(&[("a", "1"), ("b", "2")]), m(&[("b", "x"), ("c", "3")]), m(&[("a", "1"), ("b", "2"), ("c", "3")]))]
    #[case::empty_first(m(&[]), m(&[("c", "3")]), m(&[("c", "3")]))]
    #[case::empty_second(m(&[("a", "1")]), m(&[]), m(&[("a", "1")]))]
    fn merges_keeping_first(
        #[case] a: StringMap,
        #[case] b: StringMap,
        #[case] expected: StringMap,
    ) {
        assert_eq!(merge_keep_first(&a, &b), expected);
    }

    #[rstest]
    #[case::disjoint(m(&[("a", "1")]), m(&[("b", "2")]), None)]
    #[case::same_value(m(&[("a", "1")]), m(&[("a", "1")]), None)]
    #[case::different(m(&[("a", "1"), ("b", "2")]), m(&[("b", "3")]), Some("conflict for key=b, value1=2, value2=3"))]
    #[case::first_key_in_order(m(&[("z", "1"), ("y", "1")]), m(&[("z", "2"), ("y", "2")]), Some("conflict for key=y, value1=1, value2=2"))]
    fn detects_conflicts(#[case] a: StringMap, #[case] b: StringMap, #[case] error: Option<&str>) {
        assert_eq!(
            have_conflict(&a, &b)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            error
        );
    }

    #[test]
    fn stringifies_non_string_values_and_ignores_non_maps() {
        let value = json!({"a": "x", "n": 3, "f": 1.5, "b": true, "z": null});
        assert_eq!(
            to_string_map(Some(&value)),
            m(&[
                ("a", "x"),
                ("n", "3"),
                ("f", "1.5"),
                ("b", "true"),
                ("z", "<nil>")
            ])
        );
        assert!(to_string_map(Some(&json!("labels"))).is_empty());
        assert!(to_string_map(None).is_empty());
    }
}
