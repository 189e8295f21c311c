//! The monitor's memory of every AppWrapper, fed one watch event at a time. Pure: each event
//! yields its findings (violations, phase changes, and promises to check against the cluster).

use std::collections::HashMap;

use appwrapper_controller::api::condition::RESOURCES_DEPLOYED;
use chrono::{DateTime, Utc};

use super::graph::Change;
use super::leftovers::{Promise, Release};
use super::rules::{self, Snapshot};
use super::{Transition, TransitionKind, Violation};

/// What the watch delivered.
#[derive(Clone, Debug)]
pub enum Event {
    /// A (re-)list starts: the states it delivers may skip changes.
    ListStarted,
    /// A state delivered by the list.
    Listed(Snapshot),
    /// A state delivered by the watch.
    Changed(Snapshot),
    /// The object is gone; its last state.
    Deleted(Snapshot),
    /// The list is complete: what it did not deliver is gone.
    ListDone,
}

struct Known {
    state: Snapshot,
    /// The list in which (or after which) the state was observed.
    list: u64,
}

#[derive(Default)]
pub struct Tracker {
    known: HashMap<String, Known>,
    lists: u64,
}

#[derive(Debug, Default)]
pub struct Findings {
    pub violations: Vec<Violation>,
    pub transitions: Vec<Transition>,
    pub releases: Vec<Release>,
}

impl Tracker {
    pub fn apply(&mut self, event: Event, at: DateTime<Utc>) -> Findings {
        match event {
            Event::ListStarted => {
                self.lists += 1;
                Findings::default()
            }
            Event::Listed(state) | Event::Changed(state) => self.observe(state, at, false),
            Event::Deleted(state) => self.observe(state, at, true),
            Event::ListDone => self.forget_unlisted(),
        }
    }

    fn observe(&mut self, after: Snapshot, at: DateTime<Utc>, deleted: bool) -> Findings {
        let previous = if deleted {
            self.known.remove(&after.uid)
        } else {
            self.known.insert(
                after.uid.clone(),
                Known {
                    state: after.clone(),
                    list: self.lists,
                },
            )
        };
        let relisted = previous.as_ref().is_some_and(|p| p.list != self.lists);
        let before = previous.map(|p| p.state);
        let before_text = before
            .as_ref()
            .map(|b| crate::yaml::render_object(&b.object));
        let mut findings = Findings::default();
        // A state that stays wrong is reported once, when it becomes wrong.
        let known = before.as_ref().map(rules::check_state).unwrap_or_default();
        let mut messages: Vec<String> = rules::check_state(&after)
            .into_iter()
            .filter(|m| !known.contains(m))
            .collect();
        if let Some(before) = &before {
            let report = rules::check_change(before, &after, relisted);
            messages.extend(report.violations);
            if let Some((from, to, change)) = report.transition {
                let (kind, path) = match change {
                    Change::Edge => (TransitionKind::Edge, vec![from, to]),
                    Change::Inferred(path) => (TransitionKind::Inferred, path),
                    Change::Invalid(_) => (TransitionKind::Invalid, vec![from, to]),
                };
                findings.transitions.push(Transition {
                    namespace: after.namespace.clone(),
                    name: after.name.clone(),
                    from,
                    to,
                    kind,
                    path,
                    at,
                });
            }
            if !report.released.is_empty() {
                findings.releases.push(Release {
                    promise: Promise::Released(report.released),
                    state: after.clone(),
                    before: before_text.clone(),
                });
            }
        }
        findings.violations = messages
            .into_iter()
            .map(|message| violation(&after, message, before_text.clone(), at))
            .collect();
        if deleted && after.is_true(RESOURCES_DEPLOYED) {
            findings.releases.push(Release {
                promise: Promise::Disappeared,
                state: after,
                before: before_text,
            });
        }
        findings
    }

    /// After a re-list, the AppWrappers it did not deliver were deleted in the meantime.
    fn forget_unlisted(&mut self) -> Findings {
        let lists = self.lists;
        let gone: Vec<String> = self
            .known
            .iter()
            .filter(|(_, k)| k.list != lists)
            .map(|(uid, _)| uid.clone())
            .collect();
        let mut findings = Findings::default();
        for uid in gone {
            if let Some(known) = self.known.remove(&uid)
                && known.state.is_true(RESOURCES_DEPLOYED)
            {
                findings.releases.push(Release {
                    promise: Promise::Disappeared,
                    state: known.state,
                    before: None,
                });
            }
        }
        findings
    }
}

pub fn violation(
    state: &Snapshot,
    message: String,
    before: Option<String>,
    at: DateTime<Utc>,
) -> Violation {
    Violation {
        namespace: state.namespace.clone(),
        name: state.name.clone(),
        message,
        before,
        after: crate::yaml::render_object(&state.object),
        at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use appwrapper_controller::api::Phase;
    use serde_json::{Value, json};

    const QR_RD: &[(&str, &str)] = &[("QuotaReserved", "True"), ("ResourcesDeployed", "True")];
    const RELEASED: &[(&str, &str)] = &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")];

    fn state(uid: &str, phase: &str, conditions: &[(&str, &str)]) -> Snapshot {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s, "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"}))
            .collect();
        Snapshot::from_object(&json!({
            "metadata": {"name": format!("aw-{uid}"), "namespace": "ns", "uid": uid},
            "status": {"phase": phase, "conditions": conditions},
        }))
        .unwrap()
    }

    fn deleted(mut s: Snapshot) -> Snapshot {
        s.deleting = true;
        s
    }

    /// A tracker past its initial list, knowing `states`.
    fn tracker(states: &[Snapshot]) -> Tracker {
        let mut t = Tracker::default();
        feed(&mut t, Event::ListStarted);
        for s in states {
            feed(&mut t, Event::Listed(s.clone()));
        }
        feed(&mut t, Event::ListDone);
        t
    }

    fn feed(t: &mut Tracker, event: Event) -> Findings {
        t.apply(event, Utc::now())
    }

    fn messages(f: &Findings) -> Vec<&str> {
        f.violations.iter().map(|v| v.message.as_str()).collect()
    }

    #[test]
    fn an_edge_between_watch_events_is_a_direct_transition() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        let f = feed(&mut t, Event::Changed(state("a", "Suspending", QR_RD)));
        assert_eq!(messages(&f), Vec::<&str>::new());
        assert_eq!(f.transitions.len(), 1);
        assert_eq!(f.transitions[0].kind, TransitionKind::Edge);
        assert!(f.transitions[0].observed(Phase::Running, Phase::Suspending));
    }

    #[test]
    fn a_non_edge_between_watch_events_is_a_violation() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        let f = feed(&mut t, Event::Changed(state("a", "Suspended", RELEASED)));
        assert_eq!(f.violations.len(), 1, "{:?}", messages(&f));
        assert!(
            f.violations[0]
                .message
                .contains("from Running to Suspended")
        );
        assert!(f.violations[0].before.is_some());
        assert_eq!(f.transitions[0].kind, TransitionKind::Invalid);
        assert!(!f.transitions[0].observed(Phase::Running, Phase::Suspended));
    }

    #[test]
    fn a_non_edge_across_a_relist_is_inferred_and_not_observed() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        feed(&mut t, Event::ListStarted);
        let f = feed(&mut t, Event::Listed(state("a", "Suspended", RELEASED)));
        assert_eq!(messages(&f), Vec::<&str>::new());
        let transition = &f.transitions[0];
        assert_eq!(transition.kind, TransitionKind::Inferred);
        assert_eq!(
            transition.path,
            vec![Phase::Running, Phase::Suspending, Phase::Suspended]
        );
        assert!(!transition.observed(Phase::Running, Phase::Suspending));
        assert!(!transition.observed(Phase::Suspending, Phase::Suspended));
    }

    #[test]
    fn after_a_relist_the_watch_is_strict_again() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        feed(&mut t, Event::ListStarted);
        feed(&mut t, Event::Listed(state("a", "Running", QR_RD)));
        feed(&mut t, Event::ListDone);
        let f = feed(&mut t, Event::Changed(state("a", "Suspended", RELEASED)));
        assert_eq!(f.violations.len(), 1, "{:?}", messages(&f));
    }

    #[test]
    fn a_state_that_stays_wrong_is_reported_once() {
        let wrong = state("a", "Running", &[("QuotaReserved", "True")]);
        let mut t = tracker(&[]);
        assert_eq!(
            feed(&mut t, Event::Changed(wrong.clone())).violations.len(),
            1
        );
        assert_eq!(feed(&mut t, Event::Changed(wrong)).violations.len(), 0);
    }

    #[test]
    fn a_release_is_a_promise_to_check() {
        let mut t = tracker(&[state("a", "Suspending", QR_RD)]);
        let f = feed(&mut t, Event::Changed(state("a", "Suspended", RELEASED)));
        assert_eq!(
            f.releases
                .iter()
                .map(|r| r.promise.clone())
                .collect::<Vec<_>>(),
            vec![Promise::Released(vec![
                "ResourcesDeployed",
                "QuotaReserved"
            ])]
        );
    }

    #[test]
    fn deletion_with_resources_deployed_is_a_disappearance_to_check() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        let f = feed(
            &mut t,
            Event::Deleted(deleted(state("a", "Running", QR_RD))),
        );
        assert_eq!(
            f.releases
                .iter()
                .map(|r| r.promise.clone())
                .collect::<Vec<_>>(),
            vec![Promise::Disappeared]
        );
    }

    #[test]
    fn deletion_after_the_release_promises_nothing_more() {
        let mut t = tracker(&[deleted(state("a", "Terminating", RELEASED))]);
        let f = feed(
            &mut t,
            Event::Deleted(deleted(state("a", "Terminating", RELEASED))),
        );
        assert!(f.releases.is_empty());
        assert!(f.violations.is_empty());
    }

    #[test]
    fn an_appwrapper_missing_from_a_relist_disappeared() {
        let mut t = tracker(&[
            state("deployed", "Running", QR_RD),
            state("released", "Suspended", RELEASED),
            state("kept", "Running", QR_RD),
        ]);
        feed(&mut t, Event::ListStarted);
        feed(&mut t, Event::Listed(state("kept", "Running", QR_RD)));
        let f = feed(&mut t, Event::ListDone);
        let gone: Vec<(&str, &Promise)> = f
            .releases
            .iter()
            .map(|r| (r.state.uid.as_str(), &r.promise))
            .collect();
        assert_eq!(gone, vec![("deployed", &Promise::Disappeared)]);
        let again = feed(
            &mut t,
            Event::Changed(state("released", "Suspended", RELEASED)),
        );
        assert!(again.transitions.is_empty(), "forgotten, so seen anew");
    }
}
