//! What happened to each workload of a run, in seconds since the run began: when it was
//! created, first seen running, and seen ending. Fed by the watch; pure.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum End {
    Succeeded,
    Failed,
    /// Gone before it succeeded or failed: deleted.
    Deleted,
}

/// One observed state of a workload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    /// Kueue has admitted it: `spec.suspend` is no longer true (Kueue omits a false one).
    pub admitted: bool,
    /// An AppWrapper deploying or deployed (Resuming or Running): an attempt is under way.
    pub deploying: bool,
    pub running: bool,
    pub end: Option<End>,
    pub resets: i64,
    /// The reason of a True `Unhealthy` condition.
    pub unhealthy: Option<String>,
}

impl Observation {
    /// An AppWrapper: Running once its phase is (Succeeded implies it was); ended when
    /// Succeeded or Failed.
    pub fn of_appwrapper(aw: &Value) -> Observation {
        let phase = aw["status"]["phase"].as_str().unwrap_or_default();
        let unhealthy = aw["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Unhealthy" && c["status"] == "True")
            .and_then(|c| c["reason"].as_str())
            .map(str::to_string);
        Observation {
            admitted: aw["spec"]["suspend"] != true,
            deploying: matches!(phase, "Resuming" | "Running"),
            running: matches!(phase, "Running" | "Succeeded"),
            end: match phase {
                "Succeeded" => Some(End::Succeeded),
                "Failed" => Some(End::Failed),
                _ => None,
            },
            resets: aw["status"]["resettingCount"].as_i64().unwrap_or(0),
            unhealthy,
        }
    }

    /// A batch Job: running once admitted and started (the Job controller sets startTime
    /// when it creates the pods of an unsuspended Job); ended by its Complete or Failed
    /// condition.
    pub fn of_job(job: &Value) -> Observation {
        let condition = |kind: &str| {
            job["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == kind && c["status"] == "True")
        };
        let end = if condition("Complete") {
            Some(End::Succeeded)
        } else if condition("Failed") {
            Some(End::Failed)
        } else {
            None
        };
        let started = job["spec"]["suspend"] != true && !job["status"]["startTime"].is_null();
        Observation {
            admitted: job["spec"]["suspend"] != true,
            deploying: started && end.is_none(),
            running: started || end == Some(End::Succeeded),
            end,
            resets: 0,
            unhealthy: None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Record {
    pub created: Option<f64>,
    /// First seen admitted.
    pub admitted: Option<f64>,
    pub running: Option<f64>,
    pub ended: Option<f64>,
    pub end: Option<End>,
    pub max_resets: i64,
    /// Each increment of `resettingCount`, as seen.
    pub resets: Vec<SeenReset>,
    /// When the attempt under way was first seen deploying.
    #[serde(skip)]
    pub attempt_from: Option<f64>,
    /// The watch has shown it at least once.
    #[serde(skip)]
    pub watched: bool,
}

/// A reset as the watch saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SeenReset {
    /// First seen with the incremented count.
    pub at: f64,
    /// The `Unhealthy` reason then, if it was True.
    pub reason: Option<String>,
    /// When the attempt that ended in this reset was first seen deploying (else when the
    /// workload was admitted or last reset).
    pub attempt_from: Option<f64>,
}

/// What a change tells the bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum News {
    BecameRunning,
    Ended(End),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub created: usize,
    pub running: usize,
    pub succeeded: usize,
    pub failed: usize,
    pub deleted: usize,
    /// Created, not yet running nor ended.
    pub waiting: usize,
    pub total: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    records: BTreeMap<String, Record>,
}

impl Timeline {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Timeline {
        Timeline {
            records: names
                .into_iter()
                .map(|n| (n.to_string(), Record::default()))
                .collect(),
        }
    }

    /// The create request of `name` returned at `at`.
    pub fn created(&mut self, name: &str, at: f64) {
        if let Some(r) = self.records.get_mut(name) {
            r.created.get_or_insert(at);
        }
    }

    /// A state of `name` seen at `at`; names outside the plan are ignored.
    pub fn observed(&mut self, name: &str, seen: Observation, at: f64) -> Vec<News> {
        let Some(r) = self.records.get_mut(name) else {
            return Vec::new();
        };
        r.watched = true;
        let mut news = Vec::new();
        if seen.resets > r.max_resets {
            let attempt_from = r
                .attempt_from
                .take()
                .or(r.resets.last().map(|last| last.at))
                .or(r.admitted);
            for _ in r.max_resets..seen.resets {
                r.resets.push(SeenReset {
                    at,
                    reason: seen.unhealthy.clone(),
                    attempt_from,
                });
            }
            r.max_resets = seen.resets;
        }
        if seen.deploying && r.attempt_from.is_none() {
            r.attempt_from = Some(at);
        }
        if seen.admitted && r.admitted.is_none() && r.end.is_none() {
            r.admitted = Some(at);
        }
        if seen.running && r.running.is_none() && r.end.is_none() {
            r.running = Some(at);
            news.push(News::BecameRunning);
        }
        if let Some(end) = seen.end
            && r.end.is_none()
        {
            r.end = Some(end);
            r.ended = Some(at);
            news.push(News::Ended(end));
        }
        news
    }

    /// `name` disappeared at `at`: deleted, unless it had already ended.
    pub fn vanished(&mut self, name: &str, at: f64) -> Vec<News> {
        self.observed(
            name,
            Observation {
                end: Some(End::Deleted),
                ..Observation::default()
            },
            at,
        )
    }

    /// Every workload seen and not yet ended that is not in `present` (a fresh list of the
    /// namespace) is gone: it was deleted while the watch was down.
    pub fn vanished_unless(&mut self, present: &std::collections::HashSet<String>, at: f64) {
        let gone: Vec<String> = self
            .records
            .iter()
            .filter(|(name, r)| r.watched && r.end.is_none() && !present.contains(*name))
            .map(|(name, _)| name.clone())
            .collect();
        for name in gone {
            self.vanished(&name, at);
        }
    }

    pub fn records(&self) -> &BTreeMap<String, Record> {
        &self.records
    }

    /// Creation → first seen running, in seconds, of those seen running.
    pub fn to_running(&self) -> Vec<f64> {
        self.spans(|r| r.running)
    }

    /// Creation → ended (succeeded, failed or gone), of those that ended.
    pub fn to_end(&self) -> Vec<f64> {
        self.spans(|r| r.ended)
    }

    /// First seen admitted → first seen running, of those seen both.
    pub fn admitted_to_running(&self) -> Vec<f64> {
        self.records
            .values()
            .filter_map(|r| Some((r.running? - r.admitted?).max(0.0)))
            .collect()
    }

    fn spans(&self, to: impl Fn(&Record) -> Option<f64>) -> Vec<f64> {
        self.records
            .values()
            .filter_map(|r| Some((to(r)? - r.created?).max(0.0)))
            .collect()
    }

    pub fn tally(&self) -> Tally {
        let mut t = Tally {
            total: self.records.len(),
            ..Tally::default()
        };
        for r in self.records.values() {
            if r.created.is_some() {
                t.created += 1;
            }
            match (r.end, r.running) {
                (Some(End::Succeeded), _) => t.succeeded += 1,
                (Some(End::Failed), _) => t.failed += 1,
                (Some(End::Deleted), _) => t.deleted += 1,
                (None, Some(_)) => t.running += 1,
                (None, None) if r.created.is_some() => t.waiting += 1,
                (None, None) => {}
            }
        }
        t
    }

    pub fn all_ended(&self) -> bool {
        self.records.values().all(|r| r.end.is_some())
    }

    /// The names that have not ended.
    pub fn unfinished(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|(_, r)| r.end.is_none())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Seconds from the first creation to the last end.
    pub fn span(&self) -> Option<f64> {
        let first = self
            .records
            .values()
            .filter_map(|r| r.created)
            .min_by(f64::total_cmp)?;
        let last = self
            .records
            .values()
            .filter_map(|r| r.ended)
            .max_by(f64::total_cmp)?;
        Some((last - first).max(0.0))
    }
}

impl Tally {
    pub fn ended(&self) -> usize {
        self.succeeded + self.failed + self.deleted
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "created {}/{} · waiting {} · running {} · succeeded {} · failed {} · deleted {}",
            self.created,
            self.total,
            self.waiting,
            self.running,
            self.succeeded,
            self.failed,
            self.deleted
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn seen(running: bool, end: Option<End>, resets: i64) -> Observation {
        Observation {
            admitted: true,
            deploying: running && end.is_none(),
            running,
            end,
            resets,
            unhealthy: None,
        }
    }

    fn suspended(seen: Observation) -> Observation {
        Observation {
            admitted: false,
            ..seen
        }
    }

    #[rstest]
    #[case(json!({}), seen(false, None, 0))]
    #[case(json!({"status": {"phase": "Suspended"}}), seen(false, None, 0))]
    #[case(json!({"status": {"phase": "Running"}}), seen(true, None, 0))]
    #[case(json!({"spec": {"suspend": true}, "status": {"phase": "Suspended"}}), suspended(seen(false, None, 0)))]
    #[case(json!({"status": {"phase": "Resetting", "resettingCount": 1}}), seen(false, None, 1))]
    #[case(json!({"status": {"phase": "Succeeded"}}), seen(true, Some(End::Succeeded), 0))]
    #[case(json!({"status": {"phase": "Failed", "resettingCount": 1}}), seen(false, Some(End::Failed), 1))]
    fn appwrapper_states(#[case] aw: Value, #[case] expected: Observation) {
        assert_eq!(Observation::of_appwrapper(&aw), expected);
    }

    #[rstest]
    #[case(json!({"spec": {"suspend": true}}), suspended(seen(false, None, 0)))]
    #[case(json!({"spec": {"suspend": false}, "status": {"startTime": "t"}}), seen(true, None, 0))]
    #[case(json!({"spec": {"suspend": true}, "status": {"startTime": "t"}}), suspended(seen(false, None, 0)))]
    #[case(json!({"spec": {}, "status": {"startTime": "t", "conditions": [
        {"type": "Complete", "status": "True"}]}}), seen(true, Some(End::Succeeded), 0))]
    #[case(json!({"spec": {}, "status": {"conditions": [
        {"type": "Failed", "status": "True"}]}}), seen(false, Some(End::Failed), 0))]
    #[case(json!({"spec": {}, "status": {"conditions": [
        {"type": "Failed", "status": "False"}]}}), seen(false, None, 0))]
    fn job_states(#[case] job: Value, #[case] expected: Observation) {
        assert_eq!(Observation::of_job(&job), expected);
    }

    #[test]
    fn a_relist_ends_what_it_no_longer_shows_and_was_seen_before() {
        let mut t = Timeline::new(["gone", "ended", "kept", "new"]);
        for name in ["gone", "ended", "kept", "new"] {
            t.created(name, 1.0);
        }
        t.observed("gone", seen(true, None, 0), 2.0);
        t.observed("ended", seen(false, Some(End::Succeeded), 0), 2.0);
        t.observed("kept", seen(true, None, 0), 2.0);
        // "new" was created but not yet watched: a list made before it existed leaves it be.
        let present = ["kept".to_string()].into_iter().collect();
        t.vanished_unless(&present, 5.0);
        assert_eq!(t.records()["gone"].end, Some(End::Deleted));
        assert_eq!(t.records()["gone"].ended, Some(5.0));
        assert_eq!(t.records()["ended"].end, Some(End::Succeeded));
        assert_eq!(t.records()["kept"].end, None);
        assert_eq!(t.records()["new"].end, None);
    }

    #[test]
    fn a_workload_runs_and_ends_once() {
        let mut t = Timeline::new(["a", "b", "c"]);
        t.created("a", 1.0);
        t.created("b", 1.5);
        assert_eq!(
            t.observed("a", suspended(seen(false, None, 0)), 1.2),
            vec![]
        );
        assert_eq!(t.observed("a", seen(false, None, 0), 2.0), vec![]);
        assert_eq!(
            t.observed("a", seen(true, None, 0), 3.0),
            vec![News::BecameRunning]
        );
        assert_eq!(t.observed("a", seen(true, None, 0), 3.5), vec![]);
        assert_eq!(t.observed("a", seen(false, None, 1), 4.0), vec![]);
        assert_eq!(
            t.observed("a", seen(false, Some(End::Failed), 1), 9.0),
            vec![News::Ended(End::Failed)]
        );
        assert_eq!(t.vanished("a", 12.0), vec![]);
        assert_eq!(t.observed("b", seen(true, None, 0), 2.5).len(), 1);
        assert_eq!(t.vanished("b", 6.5), vec![News::Ended(End::Deleted)]);
        assert_eq!(t.observed("zz", seen(true, None, 0), 1.0), vec![]);
        assert_eq!(t.to_running(), vec![2.0, 1.0]);
        assert_eq!(t.to_end(), vec![8.0, 5.0]);
        assert_eq!(t.admitted_to_running(), vec![1.0, 0.0]);
        assert_eq!(t.records()["a"].max_resets, 1);
        assert!(!t.all_ended());
        assert_eq!(t.unfinished(), vec!["c".to_string()]);
        assert_eq!(t.span(), Some(8.0));
        let tally = t.tally();
        assert_eq!((tally.created, tally.failed, tally.deleted), (2, 1, 1));
        assert_eq!(tally.ended(), 2);
    }

    #[test]
    fn success_seen_without_running_counts_as_running_then() {
        let mut t = Timeline::new(["a"]);
        t.created("a", 0.0);
        assert_eq!(
            t.observed("a", seen(true, Some(End::Succeeded), 0), 4.0),
            vec![News::BecameRunning, News::Ended(End::Succeeded)]
        );
        assert_eq!(t.to_running(), vec![4.0]);
        assert!(t.all_ended());
    }

    fn unhealthy(resets: i64, reason: &str) -> Observation {
        Observation {
            unhealthy: Some(reason.to_string()),
            ..seen(false, None, resets)
        }
    }

    #[test]
    fn each_reset_is_recorded_with_the_attempt_it_ended() {
        let mut t = Timeline::new(["a"]);
        t.created("a", 0.0);
        t.observed("a", seen(false, None, 0), 1.0);
        t.observed("a", seen(true, None, 0), 2.0);
        t.observed("a", unhealthy(1, "FoundFailedPods"), 5.0);
        // The second attempt was never seen deploying, and the watch missed one reset.
        t.observed("a", unhealthy(3, "CreateFailed"), 9.0);
        t.observed("a", seen(true, None, 3), 10.0);
        t.observed("a", seen(false, None, 4), 12.0);
        let resets = &t.records()["a"].resets;
        let seen_as: Vec<_> = resets
            .iter()
            .map(|r| (r.at, r.reason.as_deref(), r.attempt_from))
            .collect();
        assert_eq!(
            seen_as,
            vec![
                (5.0, Some("FoundFailedPods"), Some(2.0)),
                (9.0, Some("CreateFailed"), Some(5.0)),
                (9.0, Some("CreateFailed"), Some(5.0)),
                (12.0, None, Some(10.0)),
            ]
        );
        assert_eq!(t.records()["a"].max_resets, 4);
    }
}
