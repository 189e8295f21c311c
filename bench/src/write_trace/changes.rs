//! What a write changed: the object it left against the last one seen of it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

const METADATA_FIELDS: [&str; 6] = [
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "deletionTimestamp",
    "generateName",
];

/// What `after` changed of `before`: the phase's move, each condition whose status, reason
/// or message moved, and the other fields of spec, status and metadata by name.
pub fn changes(before: Option<&Value>, after: &Value) -> String {
    let Some(before) = before else {
        return "created".into();
    };
    let mut changed = Vec::new();
    let (was, is) = (&before["status"]["phase"], &after["status"]["phase"]);
    if was != is {
        let phase = |v: &Value| v.as_str().unwrap_or("none").to_string();
        changed.push(format!("phase {}→{}", phase(was), phase(is)));
    }
    changed.extend(condition_changes(
        &before["status"]["conditions"],
        &after["status"]["conditions"],
    ));
    for part in ["status", "spec"] {
        for field in differing_fields(&before[part], &after[part]) {
            if part == "status" && (field == "phase" || field == "conditions") {
                continue;
            }
            changed.push(format!("{part}.{field}"));
        }
    }
    for field in METADATA_FIELDS {
        if before["metadata"][field] != after["metadata"][field] {
            changed.push(format!("metadata.{field}"));
        }
    }
    if changed.is_empty() {
        "nothing".into()
    } else {
        changed.join(", ")
    }
}

fn differing_fields(before: &Value, after: &Value) -> Vec<String> {
    let empty = Map::new();
    let (before, after) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let mut fields: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect();
    fields.sort_unstable();
    fields.dedup();
    fields
}

fn condition_changes(before: &Value, after: &Value) -> Vec<String> {
    let by_type = |v: &Value| -> BTreeMap<String, Value> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c["type"].as_str()?.to_string(), c.clone())))
            .collect()
    };
    let (before, after) = (by_type(before), by_type(after));
    let mut changed = Vec::new();
    for (kind, now) in &after {
        let status = now["status"].as_str().unwrap_or("?");
        match before.get(kind) {
            None => changed.push(format!("{kind}={status}")),
            Some(was) if was["status"] != now["status"] => changed.push(format!("{kind}={status}")),
            Some(was) if was["reason"] != now["reason"] => changed.push(format!(
                "{kind} reason {}",
                now["reason"].as_str().unwrap_or("none")
            )),
            Some(was) if was["message"] != now["message"] => {
                changed.push(format!("{kind} message"))
            }
            Some(was) if was != now => changed.push(format!("{kind} other")),
            Some(_) => {}
        }
    }
    changed.extend(
        before
            .keys()
            .filter(|k| !after.contains_key(*k))
            .map(|k| format!("{k} removed")),
    );
    changed
}

#[cfg(test)]
pub(super) mod fixtures {
    use serde_json::{Value, json};

    pub fn aw(phase: &str, conditions: Value) -> Value {
        json!({
            "kind": "AppWrapper",
            "metadata": {"name": "a", "namespace": "n", "resourceVersion": "7"},
            "spec": {"suspend": false},
            "status": {"phase": phase, "conditions": conditions},
        })
    }

    pub fn fresh() -> Value {
        json!({"kind": "AppWrapper", "metadata": {"name": "a", "namespace": "n"}})
    }

    pub fn condition(kind: &str, status: &str, reason: &str) -> Value {
        json!({"type": kind, "status": status, "reason": reason, "message": ""})
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_name_the_phase_move_the_conditions_and_the_fields() {
        let before = aw("Resuming", json!([condition("QuotaReserved", "True", "x")]));
        let mut after = aw(
            "Running",
            json!([
                condition("QuotaReserved", "True", "y"),
                condition("PodsReady", "True", "z")
            ]),
        );
        after["status"]["componentStatus"] = json!([{}]);
        after["metadata"]["resourceVersion"] = json!("8");
        assert_eq!(
            changes(Some(&before), &after),
            "phase Resuming→Running, PodsReady=True, QuotaReserved reason y, status.componentStatus"
        );
        assert_eq!(changes(Some(&after), &after), "nothing");
        assert_eq!(changes(None, &after), "created");
        let mut resumed = before.clone();
        resumed["spec"]["suspend"] = json!(true);
        resumed["status"]["conditions"] = json!([]);
        resumed["metadata"]["finalizers"] = json!(["f"]);
        assert_eq!(
            changes(Some(&before), &resumed),
            "QuotaReserved removed, spec.suspend, metadata.finalizers"
        );
    }
}
