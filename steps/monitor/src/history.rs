//! What the monitor saw of each AppWrapper over time: its phase and conditions at every
//! observed change, for the timelines of the report. Bounded: a history keeps its first
//! observation and the latest ones, and the monitor keeps a limited number of histories,
//! forgetting the least recently changed when full. A scenario takes the histories of its
//! namespace when it ends.

use std::collections::HashMap;

use appwrapper_controller::api::Phase;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::rules::Snapshot;

/// Observations kept per AppWrapper.
pub const MAX_OBSERVATIONS: usize = 200;
/// AppWrappers whose histories are kept at once: scenarios take theirs when they end, so
/// this is reached only by AppWrappers outside the suite's namespaces.
pub const MAX_APPWRAPPERS: usize = 500;

/// One condition as observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionState {
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// The state of an AppWrapper at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub at: DateTime<Utc>,
    pub phase: Phase,
    pub deleting: bool,
    /// The AppWrapper is gone (deleted, or missing from a re-list).
    pub gone: bool,
    pub resetting_count: i64,
    pub conditions: Vec<ConditionState>,
}

impl Observation {
    fn from_snapshot(s: &Snapshot, at: DateTime<Utc>, gone: bool) -> Observation {
        Observation {
            at,
            phase: s.phase,
            deleting: s.deleting,
            gone,
            resetting_count: s.resetting_count,
            conditions: conditions_of(&s.object),
        }
    }

    /// The same state, whenever seen.
    fn same_state(&self, other: &Observation) -> bool {
        (
            self.phase,
            self.deleting,
            self.gone,
            self.resetting_count,
            &self.conditions,
        ) == (
            other.phase,
            other.deleting,
            other.gone,
            other.resetting_count,
            &other.conditions,
        )
    }

    pub fn condition(&self, kind: &str) -> Option<&ConditionState> {
        self.conditions.iter().find(|c| c.kind == kind)
    }
}

fn conditions_of(object: &Value) -> Vec<ConditionState> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut conditions: Vec<ConditionState> = object["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| ConditionState {
                    kind: text(&c["type"]),
                    status: text(&c["status"]),
                    reason: text(&c["reason"]),
                    message: text(&c["message"]),
                })
                .collect()
        })
        .unwrap_or_default();
    conditions.sort_by(|a, b| a.kind.cmp(&b.kind));
    conditions
}

/// Everything observed of one AppWrapper, oldest first.
#[derive(Clone, Debug)]
pub struct AppWrapperHistory {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// `metadata.creationTimestamp` (whole seconds, from the API server).
    pub created: Option<DateTime<Utc>>,
    pub observations: Vec<Observation>,
    /// Observations left out between the first and the kept ones, to bound memory.
    pub dropped: usize,
    /// When `ResourcesDeployed` last became True, as last seen while it was: the deployment
    /// time, still known once a failure has taken the resources away.
    pub last_deployed: Option<DateTime<Utc>>,
}

impl AppWrapperHistory {
    /// Where its timeline starts: its creation, or its first observation when the creation
    /// time is unknown.
    pub fn origin(&self) -> Option<DateTime<Utc>> {
        self.created
            .or_else(|| self.observations.first().map(|o| o.at))
    }

    fn push(&mut self, observation: Observation) {
        if self
            .observations
            .last()
            .is_some_and(|last| last.same_state(&observation))
        {
            return;
        }
        if self.observations.len() >= MAX_OBSERVATIONS {
            self.observations.remove(1);
            self.dropped += 1;
        }
        self.observations.push(observation);
    }

    fn last_seen(&self) -> Option<DateTime<Utc>> {
        self.observations.last().map(|o| o.at)
    }
}

/// The histories of every AppWrapper the monitor watches, by uid.
#[derive(Default)]
pub struct History {
    by_uid: HashMap<String, AppWrapperHistory>,
}

impl History {
    /// Records `s` as observed at `at` (`gone`: its last state before it disappeared).
    pub fn observe(&mut self, s: &Snapshot, at: DateTime<Utc>, gone: bool) {
        if !self.by_uid.contains_key(&s.uid) && self.by_uid.len() >= MAX_APPWRAPPERS {
            self.forget_stalest();
        }
        let history = self
            .by_uid
            .entry(s.uid.clone())
            .or_insert_with(|| AppWrapperHistory {
                namespace: s.namespace.clone(),
                name: s.name.clone(),
                uid: s.uid.clone(),
                created: s.created,
                observations: Vec::new(),
                dropped: 0,
                last_deployed: None,
            });
        if let Some(since) = s.became_true("ResourcesDeployed") {
            history.last_deployed = Some(since);
        }
        history.push(Observation::from_snapshot(s, at, gone));
    }

    /// When `ResourcesDeployed` of `namespace/name` last became True, as far as observed.
    pub fn last_deployed(&self, namespace: &str, name: &str) -> Option<DateTime<Utc>> {
        self.by_uid
            .values()
            .filter(|h| h.namespace == namespace && h.name == name)
            .filter_map(|h| h.last_deployed)
            .max()
    }

    /// Takes the histories of `namespace` out, oldest AppWrapper first.
    pub fn take(&mut self, namespace: &str) -> Vec<AppWrapperHistory> {
        let uids: Vec<String> = self
            .by_uid
            .values()
            .filter(|h| h.namespace == namespace)
            .map(|h| h.uid.clone())
            .collect();
        let mut taken: Vec<AppWrapperHistory> = uids
            .iter()
            .filter_map(|uid| self.by_uid.remove(uid))
            .collect();
        taken.sort_by(|a, b| (a.origin(), &a.name).cmp(&(b.origin(), &b.name)));
        taken
    }

    /// Whether an observation of the AppWrapper `namespace/name` satisfies `seen`.
    pub fn any(&self, namespace: &str, name: &str, seen: impl Fn(&Observation) -> bool) -> bool {
        self.by_uid
            .values()
            .filter(|h| h.namespace == namespace && h.name == name)
            .flat_map(|h| h.observations.iter())
            .any(seen)
    }

    pub fn len(&self) -> usize {
        self.by_uid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }

    fn forget_stalest(&mut self) {
        let stalest = self
            .by_uid
            .values()
            .min_by_key(|h| h.last_seen())
            .map(|h| h.uid.clone());
        if let Some(uid) = stalest {
            self.by_uid.remove(&uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use serde_json::json;

    fn snapshot(ns: &str, uid: &str, phase: &str, qr: &str) -> Snapshot {
        Snapshot::from_object(&json!({
            "metadata": {"name": format!("aw-{uid}"), "namespace": ns, "uid": uid,
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": phase, "conditions": [
                {"type": "QuotaReserved", "status": qr, "reason": "R", "message": "m"}
            ]},
        }))
        .unwrap()
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
            + TimeDelta::seconds(seconds)
    }

    #[test]
    fn only_changes_are_kept() {
        let mut h = History::default();
        let cases = [
            ("Suspended", "False", 1),
            ("Suspended", "False", 2),
            ("Suspended", "True", 3),
            ("Resuming", "True", 4),
            ("Resuming", "True", 5),
        ];
        for (i, (phase, qr, _)) in cases.iter().enumerate() {
            h.observe(&snapshot("ns", "a", phase, qr), at(i as i64), false);
        }
        let taken = h.take("ns");
        let seen: Vec<(Phase, &str, i64)> = taken[0]
            .observations
            .iter()
            .map(|o| {
                (
                    o.phase,
                    o.condition("QuotaReserved").unwrap().status.as_str(),
                    o.at.timestamp() - at(0).timestamp(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (Phase::Suspended, "False", 0),
                (Phase::Suspended, "True", 2),
                (Phase::Resuming, "True", 3)
            ]
        );
        assert_eq!(taken[0].origin(), Some(at(0)));
        assert!(h.is_empty(), "taking a namespace forgets it");
    }

    #[test]
    fn the_deployment_time_outlives_the_resources() {
        let mut h = History::default();
        let with_rd = |phase: &str, rd: &str, since: &str| {
            Snapshot::from_object(&json!({
                "metadata": {"name": "aw-a", "namespace": "ns", "uid": "a"},
                "status": {"phase": phase, "conditions": [
                    {"type": "ResourcesDeployed", "status": rd, "reason": "R",
                     "lastTransitionTime": since}
                ]},
            }))
            .unwrap()
        };
        h.observe(
            &with_rd("Suspended", "False", "2026-01-01T00:00:00Z"),
            at(0),
            false,
        );
        assert_eq!(h.last_deployed("ns", "aw-a"), None);
        h.observe(
            &with_rd("Resuming", "True", "2026-01-01T00:00:07Z"),
            at(7),
            false,
        );
        h.observe(
            &with_rd("Failed", "False", "2026-01-01T00:00:09Z"),
            at(9),
            false,
        );
        assert_eq!(h.last_deployed("ns", "aw-a"), Some(at(7)));
        assert_eq!(h.last_deployed("ns", "other"), None);
    }

    #[test]
    fn a_long_history_keeps_its_first_and_latest_observations() {
        let mut h = History::default();
        let total = MAX_OBSERVATIONS + 10;
        for i in 0..total {
            let phase = if i % 2 == 0 { "Running" } else { "Resetting" };
            h.observe(&snapshot("ns", "a", phase, "True"), at(i as i64), false);
        }
        let taken = h.take("ns").remove(0);
        assert_eq!(taken.observations.len(), MAX_OBSERVATIONS);
        assert_eq!(taken.dropped, 10);
        assert_eq!(taken.observations[0].at, at(0));
        assert_eq!(taken.observations[1].at, at(11));
        assert_eq!(taken.observations.last().unwrap().at, at(total as i64 - 1));
    }

    #[test]
    fn a_full_monitor_forgets_the_stalest_appwrapper() {
        let mut h = History::default();
        for i in 0..MAX_APPWRAPPERS {
            h.observe(
                &snapshot("ns", &i.to_string(), "Suspended", "False"),
                at(i as i64 + 1),
                false,
            );
        }
        h.observe(&snapshot("ns", "0", "Resuming", "True"), at(5000), false);
        h.observe(
            &snapshot("other", "new", "Suspended", "False"),
            at(5001),
            false,
        );
        assert_eq!(h.len(), MAX_APPWRAPPERS);
        let kept: Vec<String> = h.take("ns").into_iter().map(|a| a.uid).collect();
        assert!(kept.contains(&"0".to_string()), "recently changed: kept");
        assert!(!kept.contains(&"1".to_string()), "stalest: forgotten");
        assert_eq!(h.take("other").len(), 1);
    }
}
