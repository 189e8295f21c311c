//! The last states each AppWrapper's writes left, whole, each with when its write was made
//! (from the audit log): what a timing window asks when its step began after the change it
//! times, so that a harness slowed down by a busy machine still places the change exactly.

use std::collections::{HashMap, VecDeque};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::audit_log::Span;

/// States kept per AppWrapper: the last ones, which a window step asks about.
pub const KEPT: usize = 64;
/// AppWrappers kept at once; past it, the one written least recently is forgotten.
pub const MAX_APPWRAPPERS: usize = 500;

/// By namespace and name, oldest first.
#[derive(Default)]
pub struct WrittenStates(HashMap<(String, String), VecDeque<(Span, Value)>>);

impl WrittenStates {
    pub fn record(&mut self, span: Span, object: &Value) {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let key = (
            text(&object["metadata"]["namespace"]),
            text(&object["metadata"]["name"]),
        );
        if !self.0.contains_key(&key) && self.0.len() >= MAX_APPWRAPPERS {
            let stalest = self
                .0
                .iter()
                .min_by_key(|(_, states)| states.back().map(|(span, _)| span.completed))
                .map(|(k, _)| k.clone());
            if let Some(stalest) = stalest {
                self.0.remove(&stalest);
            }
        }
        let states = self.0.entry(key).or_default();
        if states.len() == KEPT {
            states.pop_front();
        }
        states.push_back((span, object.clone()));
    }

    pub fn of(&self, namespace: &str, name: &str) -> Vec<(Span, Value)> {
        self.0
            .get(&(namespace.to_string(), name.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets a namespace's AppWrappers (its scenario is over).
    pub fn forget(&mut self, namespace: &str) {
        self.0.retain(|(ns, _), _| ns != namespace);
    }
}

/// When the AppWrapper came to be as `accepts` wants it, for the run of accepted states that
/// ends its `states` (oldest first): after the write of the last state before that run was
/// received, and by the time the write that began the run completed. `None` when every state
/// kept is accepted, or the last one is not, or another AppWrapper of the same name wrote the
/// states before.
pub fn change(
    states: &[(Span, Value)],
    accepts: impl Fn(&Value) -> bool,
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let (_, last) = states.last()?;
    let uid = &last["metadata"]["uid"];
    let first_accepted = states
        .iter()
        .rposition(|(_, s)| !accepts(s) || s["metadata"]["uid"] != *uid)?
        + 1;
    let (before, _) = &states[first_accepted - 1];
    let (began, _) = states.get(first_accepted)?;
    if states[first_accepted - 1].1["metadata"]["uid"] != *uid {
        return None;
    }
    Some((before.received, began.completed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-03T08:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
            + chrono::TimeDelta::milliseconds(ms)
    }

    fn state(phase: &str, uid: &str, received: i64, completed: i64) -> (Span, Value) {
        (
            Span {
                received: at(received),
                completed: at(completed),
            },
            json!({"metadata": {"namespace": "ns", "name": "aw", "uid": uid},
                   "status": {"phase": phase}}),
        )
    }

    fn running(s: &Value) -> bool {
        s["status"]["phase"] == "Running"
    }

    #[test]
    fn the_change_lies_between_the_last_refused_write_and_the_first_accepted_one() {
        let states = [
            state("Suspended", "u", 0, 5),
            state("Resuming", "u", 100, 110),
            state("Running", "u", 200, 210),
            state("Running", "u", 300, 310),
        ];
        assert_eq!(change(&states, running), Some((at(100), at(210))));
    }

    #[rstest::rstest]
    #[case::all_accepted(vec![state("Running", "u", 0, 5), state("Running", "u", 10, 15)])]
    #[case::last_refused(vec![state("Running", "u", 0, 5), state("Resuming", "u", 10, 15)])]
    #[case::another_appwrapper_before(vec![state("Resuming", "old", 0, 5),
                                           state("Running", "u", 10, 15)])]
    #[case::nothing(vec![])]
    fn no_change_can_be_told(#[case] states: Vec<(Span, Value)>) {
        assert_eq!(change(&states, running), None);
    }

    #[test]
    fn only_the_last_states_are_kept_and_a_namespace_is_forgotten() {
        let mut kept = WrittenStates::default();
        for i in 0..(KEPT as i64 + 3) {
            let (span, object) = state("Running", "u", i, i);
            kept.record(span, &object);
        }
        let states = kept.of("ns", "aw");
        assert_eq!(states.len(), KEPT);
        assert_eq!(states[0].0.received, at(3));
        kept.forget("ns");
        assert!(kept.of("ns", "aw").is_empty());
    }
}
