//! JSON merge patch (RFC 7386) between two documents, as controller-runtime's `MergeFrom`.

use serde_json::{Map, Value};

/// The merge patch that turns `old` into `new`, or `None` when they are equal. Objects are
/// diffed key by key (removed keys become `null`); anything else is replaced wholesale.
pub fn diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (key, old_value) in o {
                match n.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new_value) => {
                        if let Some(p) = diff(old_value, new_value) {
                            patch.insert(key.clone(), p);
                        }
                    }
                }
            }
            for (key, new_value) in n {
                if !o.contains_key(key) {
                    patch.insert(key.clone(), new_value.clone());
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_documents_need_no_patch() {
        assert_eq!(diff(&json!({"a": [1]}), &json!({"a": [1]})), None);
    }

    #[test]
    fn objects_are_diffed_and_arrays_replaced() {
        let old = json!({"phase": "Running", "keep": 1, "gone": true, "conditions": [{"type": "A"}], "nested": {"x": 1, "y": 2}});
        let new = json!({"phase": "Failed", "keep": 1, "conditions": [{"type": "A"}, {"type": "B"}], "nested": {"x": 1, "y": 3}, "added": "v"});
        assert_eq!(
            diff(&old, &new),
            Some(json!({
                "phase": "Failed",
                "gone": null,
                "conditions": [{"type": "A"}, {"type": "B"}],
                "nested": {"y": 3},
                "added": "v"
            }))
        );
    }

    #[test]
    fn patch_applies_back_to_new() {
        let old = json!({"a": {"b": 1, "c": 2}, "d": [1, 2]});
        let new = json!({"a": {"b": 5}, "d": [], "e": {"f": null}});
        let patch = diff(&old, &new).unwrap();
        let mut merged = old.clone();
        apply(&mut merged, &patch);
        assert_eq!(merged, json!({"a": {"b": 5}, "d": [], "e": {}}));
    }

    fn apply(target: &mut Value, patch: &Value) {
        let Value::Object(p) = patch else {
            *target = patch.clone();
            return;
        };
        if !target.is_object() {
            *target = json!({});
        }
        let Value::Object(t) = target else { return };
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                apply(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}
