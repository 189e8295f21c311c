//! Which write answers which, from an audit log at `audit::Detail::Writes`: every write to
//! an AppWrapper or to its Workload, described by what it changed in the object it left, and
//! every Workload write by Kueue counted against the write that came just before it on the
//! same AppWrapper (by any client, on either object). Pure over the log's lines.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::audit::{client_of, resource_of, timestamp};

mod changes;
pub use changes::changes;

/// The client whose Workload writes are traced back.
const KUEUE: &str = "kueue";

/// One kind of write: who wrote what, and what it changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriteKind {
    /// `appwrapper-controller appwrappers/status: phase Resuming→Running, PodsReady=True`.
    pub label: String,
    pub count: u64,
    /// Kueue's Workload writes that came next on the same AppWrapper, by their labels.
    pub answered_by: Vec<(String, u64)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WriteTrace {
    /// Most first.
    pub kinds: Vec<WriteKind>,
    /// Kueue's Workload writes with no earlier write on their AppWrapper in the window.
    pub unattributed: u64,
    /// The most common histories: each AppWrapper's writes and its Workload's in order, with
    /// how many AppWrappers had exactly that one; most first, [`HISTORIES`] of them.
    pub histories: Vec<(Vec<String>, u64)>,
}

const HISTORIES: usize = 3;

struct Write {
    received: DateTime<Utc>,
    completed: DateTime<Utc>,
    client: String,
    on_workload: bool,
    label: String,
}

type ObjectKey = (String, String, String);

/// Traces the writes received between `from` and `to`.
pub fn trace<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> WriteTrace {
    let mut last_seen: HashMap<ObjectKey, Value> = HashMap::new();
    let mut by_appwrapper: HashMap<(String, String), Vec<Write>> = HashMap::new();
    for line in lines {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(written) = completed_write(&event) else {
            continue;
        };
        let kind = event["objectRef"]["resource"].as_str().unwrap_or_default();
        let Some(appwrapper) = appwrapper_of(kind, written) else {
            continue;
        };
        let key = (
            kind.to_string(),
            appwrapper.0.clone(),
            name_of(written).to_string(),
        );
        let changed = changes(last_seen.get(&key), written);
        last_seen.insert(key, written.clone());
        let (Some(received), Some(completed)) = (
            timestamp(&event["requestReceivedTimestamp"]),
            timestamp(&event["stageTimestamp"]),
        ) else {
            continue;
        };
        if received < from || received > to {
            continue;
        }
        let client = client_of(event["userAgent"].as_str().unwrap_or_default());
        let resource = resource_of(&event["objectRef"]);
        let verb = event["verb"].as_str().unwrap_or("?");
        by_appwrapper.entry(appwrapper).or_default().push(Write {
            received,
            completed,
            label: format!("{client} {verb} {resource}: {changed}"),
            on_workload: kind == "workloads",
            client,
        });
    }
    tally(by_appwrapper.into_values())
}

fn tally(histories: impl Iterator<Item = Vec<Write>>) -> WriteTrace {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut answers: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut unattributed = 0;
    let mut seen: HashMap<Vec<String>, u64> = HashMap::new();
    for mut writes in histories {
        writes.sort_by_key(|w| w.completed);
        *seen
            .entry(writes.iter().map(|w| w.label.clone()).collect())
            .or_default() += 1;
        for (i, write) in writes.iter().enumerate() {
            *counts.entry(write.label.clone()).or_default() += 1;
            if write.client != KUEUE || !write.on_workload {
                continue;
            }
            let cause = writes[..i]
                .iter()
                .rev()
                .find(|c| c.completed <= write.received);
            match cause {
                Some(cause) => {
                    *answers
                        .entry(cause.label.clone())
                        .or_default()
                        .entry(write.label.clone())
                        .or_default() += 1;
                }
                None => unattributed += 1,
            }
        }
    }
    let mut kinds: Vec<WriteKind> = counts
        .into_iter()
        .map(|(label, count)| {
            let mut answered_by: Vec<(String, u64)> = answers
                .remove(&label)
                .unwrap_or_default()
                .into_iter()
                .collect();
            answered_by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            WriteKind {
                label,
                count,
                answered_by,
            }
        })
        .collect();
    kinds.sort_by(|a, b| b.count.cmp(&a.count).then(a.label.cmp(&b.label)));
    let mut histories: Vec<(Vec<String>, u64)> = seen.into_iter().collect();
    histories.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    histories.truncate(HISTORIES);
    WriteTrace {
        kinds,
        unattributed,
        histories,
    }
}

/// The object a successful write left, if the event is one.
fn completed_write(event: &Value) -> Option<&Value> {
    if event["stage"] != "ResponseComplete" {
        return None;
    }
    let code = event["responseStatus"]["code"].as_u64().unwrap_or(200);
    let object = &event["responseObject"];
    ((200..300).contains(&code) && object.is_object() && object["kind"] != "Status")
        .then_some(object)
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

/// (namespace, name) of the AppWrapper an AppWrapper or a Workload belongs to.
fn appwrapper_of(resource: &str, object: &Value) -> Option<(String, String)> {
    let namespace = object["metadata"]["namespace"].as_str()?.to_string();
    match resource {
        "appwrappers" => Some((namespace, name_of(object).to_string())),
        "workloads" => object["metadata"]["ownerReferences"]
            .as_array()?
            .iter()
            .find(|o| o["kind"] == "AppWrapper")
            .and_then(|o| o["name"].as_str())
            .map(|name| (namespace, name.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::changes::fixtures::*;
    use super::*;
    use serde_json::json;

    fn event(resource: &str, sub: Option<&str>, agent: &str, at: &str, object: Value) -> String {
        json!({
            "kind": "Event", "stage": "ResponseComplete", "verb": "patch",
            "userAgent": agent,
            "requestReceivedTimestamp": at, "stageTimestamp": at,
            "objectRef": {"resource": resource, "subresource": sub, "namespace": "n"},
            "responseStatus": {"code": 200},
            "responseObject": object,
        })
        .to_string()
    }

    fn workload(admitted: &str) -> Value {
        json!({
            "kind": "Workload",
            "metadata": {"name": "appwrapper-a-1", "namespace": "n",
                "ownerReferences": [{"kind": "AppWrapper", "name": "a"}]},
            "status": {"conditions": [condition("Admitted", admitted, "")]},
        })
    }

    #[test]
    fn kueue_workload_writes_are_counted_against_the_write_before_them() {
        let running = aw("Running", json!([condition("PodsReady", "True", "")]));
        let lines = [
            event(
                "appwrappers",
                None,
                "awconf-bench",
                "2026-01-01T00:00:01Z",
                fresh(),
            ),
            event(
                "workloads",
                None,
                "kueue/v1",
                "2026-01-01T00:00:02Z",
                workload("False"),
            ),
            event(
                "workloads",
                Some("status"),
                "kueue/v1",
                "2026-01-01T00:00:03Z",
                workload("True"),
            ),
            event(
                "appwrappers",
                Some("status"),
                "appwrapper-controller/0.1",
                "2026-01-01T00:00:04Z",
                running.clone(),
            ),
            event(
                "appwrappers",
                Some("status"),
                "appwrapper-controller/0.1",
                "2026-01-01T00:00:05Z",
                running,
            ),
            event(
                "workloads",
                Some("status"),
                "kueue/v1",
                "2026-01-01T00:00:06Z",
                workload("True"),
            ),
            "not json".to_string(),
        ];
        let from = "2026-01-01T00:00:00Z".parse().unwrap();
        let to = "2026-01-01T00:01:00Z".parse().unwrap();
        let traced = trace(lines.iter().map(String::as_str), from, to);
        let kind = |label: &str| {
            traced
                .kinds
                .iter()
                .find(|k| k.label == label)
                .unwrap_or_else(|| panic!("{label} in {:#?}", traced.kinds))
        };
        let created = kind("awconf-bench patch appwrappers: created");
        assert_eq!(
            created.answered_by,
            [("kueue patch workloads: created".to_string(), 1)]
        );
        let repeated = kind("appwrapper-controller patch appwrappers/status: nothing");
        assert_eq!(repeated.count, 1);
        assert_eq!(
            repeated.answered_by,
            [("kueue patch workloads/status: nothing".to_string(), 1)]
        );
        let unanswered = kind(
            "appwrapper-controller patch appwrappers/status: phase none→Running, PodsReady=True, spec.suspend",
        );
        assert!(unanswered.answered_by.is_empty(), "{unanswered:?}");
        assert_eq!(traced.unattributed, 0);
        assert_eq!(traced.histories.len(), 1);
        let (history, appwrappers) = &traced.histories[0];
        assert_eq!(*appwrappers, 1);
        assert_eq!(history.len(), 6);
        assert_eq!(history[0], "awconf-bench patch appwrappers: created");
    }

    #[test]
    fn failed_writes_and_writes_outside_the_window_are_left_out() {
        let mut failed: Value = serde_json::from_str(&event(
            "appwrappers",
            None,
            "x",
            "2026-01-01T00:00:01Z",
            fresh(),
        ))
        .unwrap();
        failed["responseStatus"]["code"] = json!(409);
        let late = event("appwrappers", None, "x", "2026-01-02T00:00:00Z", fresh());
        let lines = [failed.to_string(), late];
        let from = "2026-01-01T00:00:00Z".parse().unwrap();
        let to = "2026-01-01T00:01:00Z".parse().unwrap();
        assert_eq!(
            trace(lines.iter().map(String::as_str), from, to),
            WriteTrace::default()
        );
    }
}
