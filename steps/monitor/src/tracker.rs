//! The monitor's memory of every AppWrapper, fed one watch event at a time. Pure: each event
//! yields its findings (violations, phase changes, and promises to check against the cluster).
//!
//! The watch loses nothing while it resumes from its last resourceVersion, even after an
//! error; it can lose states only when it re-lists. So a re-list is where missed states are
//! judged, per AppWrapper and so per namespace: an AppWrapper whose resourceVersion did not
//! change missed nothing, one whose change a single step explains is checked as such, and any
//! other (a phase change that is not an edge, a reset or a condition flip that left only
//! traces, a disappearance while something was held, a first sighting past creation) is a
//! violation in its namespace, since the states in between went unchecked.

use std::collections::HashMap;

use appwrapper_controller::api::condition::RESOURCES_DEPLOYED;
use chrono::{DateTime, Utc};

use super::findings::{MISSED, OUT_OF_ORDER, Transition, TransitionKind, UNLOGGED, Violation};
use super::graph::Change;
use super::leftovers::{Components, Promise, Release};
use super::rules::{self, Snapshot};

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
    /// A state a write left, read from the API server's audit log in resourceVersion order
    /// (`gone`: the write removed the object). `doubtful`: an earlier write to the object has
    /// no outcome in the log, so states may have come in between.
    Logged {
        state: Snapshot,
        gone: bool,
        doubtful: bool,
    },
    /// A state the audit log wrote after a later state of the same object.
    OutOfOrder(Snapshot),
    /// The object with this uid was removed at once; the log shows no state of its removal.
    Vanished(String),
}

struct Known {
    state: Snapshot,
    /// The list in which (or after which) the state was observed.
    list: u64,
    /// Every component named in the states seen so far.
    components: Components,
}

#[derive(Default)]
pub struct Tracker {
    known: HashMap<String, Known>,
    lists: u64,
    /// A list was complete: what a later one delivers first was created since.
    synced: bool,
}

/// How a state arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Listed,
    Watched,
    Deleted,
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
            Event::Listed(state) => self.observe(state, at, Seen::Listed, None),
            Event::Changed(state) => self.observe(state, at, Seen::Watched, None),
            Event::Deleted(state) => self.observe(state, at, Seen::Deleted, None),
            Event::Logged {
                state,
                gone,
                doubtful,
            } => {
                let seen = if gone { Seen::Deleted } else { Seen::Watched };
                self.observe(state, at, seen, doubtful.then_some(UNLOGGED))
            }
            Event::Vanished(uid) => match self.known.get(&uid) {
                Some(known) => {
                    let last = known.state.clone();
                    self.observe(last, at, Seen::Deleted, None)
                }
                None => Findings::default(),
            },
            Event::OutOfOrder(state) => Findings {
                violations: vec![violation(
                    &state,
                    format!("{OUT_OF_ORDER}: resourceVersion {}", state.resource_version),
                    None,
                    at,
                )],
                ..Findings::default()
            },
            Event::ListDone => {
                let findings = self.forget_unlisted(at);
                self.synced = true;
                findings
            }
        }
    }

    /// `gap`: why states may have come between the last one known and `after` unseen, besides
    /// a re-list (the prefix of what that leaves unchecked).
    fn observe(
        &mut self,
        after: Snapshot,
        at: DateTime<Utc>,
        seen: Seen,
        gap: Option<&'static str>,
    ) -> Findings {
        let deleted = seen == Seen::Deleted;
        let previous = self.known.remove(&after.uid);
        let created_unseen = previous.is_none() && seen == Seen::Listed && self.synced;
        let relisted = previous
            .as_ref()
            .is_some_and(|p| p.list != self.lists && !p.state.same_version(&after));
        let gap = match gap {
            Some(prefix) if previous.is_some() => Some(prefix),
            _ => relisted.then_some(MISSED),
        };
        let (before, mut components) = match previous {
            Some(p) => (Some(p.state), p.components),
            None => (None, Components::default()),
        };
        components.remember(&after);
        if !deleted {
            self.known.insert(
                after.uid.clone(),
                Known {
                    state: after.clone(),
                    list: self.lists,
                    components: components.clone(),
                },
            );
        }
        let before_text = before
            .as_ref()
            .map(|b| objects::yaml::render_object(&b.object));
        let mut findings = Findings::default();
        // A state that stays wrong is reported once, when it becomes wrong.
        let known = before.as_ref().map(rules::check_state).unwrap_or_default();
        let mut messages: Vec<String> = rules::check_state(&after)
            .into_iter()
            .filter(|m| !known.contains(m))
            .collect();
        if created_unseen && let Some(message) = rules::missed_creation(&after) {
            messages.push(missed(&message));
        }
        if let Some(before) = &before {
            let report = rules::check_change(before, &after, gap.is_some());
            messages.extend(report.violations);
            if !report.missed.is_empty() {
                let prefix = gap.unwrap_or(MISSED);
                messages.push(format!("{prefix}: {}", report.missed.join("; ")));
            }
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
                    components: components.clone(),
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
                promise: if after.removed_past_finalizer() {
                    Promise::RemovedPastFinalizer
                } else {
                    Promise::Disappeared
                },
                state: after,
                components,
                before: before_text,
            });
        }
        findings
    }

    /// After a re-list, the AppWrappers it did not deliver were deleted in the meantime.
    fn forget_unlisted(&mut self, at: DateTime<Utc>) -> Findings {
        let lists = self.lists;
        let gone: Vec<String> = self
            .known
            .iter()
            .filter(|(_, k)| k.list != lists)
            .map(|(uid, _)| uid.clone())
            .collect();
        let mut findings = Findings::default();
        for uid in gone {
            let Some(known) = self.known.remove(&uid) else {
                continue;
            };
            if let Some(message) = rules::missed_disappearance(&known.state) {
                findings
                    .violations
                    .push(violation(&known.state, missed(&message), None, at));
            }
            if known.state.is_true(RESOURCES_DEPLOYED) {
                findings.releases.push(Release {
                    promise: Promise::Disappeared,
                    state: known.state,
                    components: known.components,
                    before: None,
                });
            }
        }
        findings
    }
}

/// The violation of states a re-list skipped: the monitor could not check them.
fn missed(evidence: &str) -> String {
    format!("{MISSED}: {evidence}")
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
        after: objects::yaml::render_object(&state.object),
        at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use appwrapper_controller::api::{FINALIZER, Phase};
    use serde_json::{Value, json};

    const QR_RD: &[(&str, &str)] = &[("QuotaReserved", "True"), ("ResourcesDeployed", "True")];
    const RELEASED: &[(&str, &str)] = &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")];

    /// A state; without a resourceVersion, so that every state may be a change.
    fn state(uid: &str, phase: &str, conditions: &[(&str, &str)]) -> Snapshot {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s, "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"}))
            .collect();
        Snapshot::from_object(&json!({
            "metadata": {"name": format!("aw-{uid}"), "namespace": "ns", "uid": uid,
                         "finalizers": [FINALIZER]},
            "status": {"phase": phase, "conditions": conditions},
        }))
        .unwrap()
    }

    fn versioned(mut s: Snapshot, version: &str) -> Snapshot {
        s.resource_version = version.into();
        s
    }

    fn with_component(mut s: Snapshot, name: &str, deployed: bool) -> Snapshot {
        s.components.push(rules::Component {
            object: rules::ComponentRef {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: name.into(),
            },
            deployed,
        });
        s
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

    fn logged(s: Snapshot, gone: bool, doubtful: bool) -> Event {
        Event::Logged {
            state: s,
            gone,
            doubtful,
        }
    }

    /// From the audit log every state arrives, so a change that is not one step is the
    /// controller's, unless a write of unknown outcome came before it.
    #[rstest::rstest]
    #[case::a_skipped_state_is_a_violation(
        false,
        "phase changed from Running to Suspended, which the phase graph does not allow"
    )]
    #[case::unless_a_write_had_no_outcome_in_the_log(true, UNLOGGED)]
    fn a_logged_change_is_judged_as_seen_unless_in_doubt(
        #[case] doubtful: bool,
        #[case] begins: &str,
    ) {
        let mut t = Tracker::default();
        feed(&mut t, logged(state("a", "Running", QR_RD), false, false));
        let f = feed(
            &mut t,
            logged(state("a", "Suspended", QR_RD), false, doubtful),
        );
        let found = messages(&f);
        assert!(found.iter().any(|m| m.starts_with(begins)), "{found:?}");
        assert_eq!(
            f.violations.iter().any(Violation::is_unchecked),
            doubtful,
            "{found:?}"
        );
    }

    #[test]
    fn an_appwrapper_removed_at_once_is_gone_in_its_last_state() {
        let mut t = Tracker::default();
        let deployed = with_component(state("a", "Running", QR_RD), "p", true);
        feed(&mut t, logged(deployed, false, false));
        let f = feed(&mut t, Event::Vanished("a".into()));
        assert_eq!(f.releases.len(), 1);
        assert!(
            feed(&mut t, Event::Vanished("a".into()))
                .releases
                .is_empty()
        );
    }

    #[test]
    fn a_logged_removal_while_deployed_is_a_release_to_check_and_a_late_state_is_unchecked() {
        let mut t = Tracker::default();
        let deployed = with_component(state("a", "Running", QR_RD), "p", true);
        feed(&mut t, logged(deployed.clone(), false, false));
        let f = feed(&mut t, logged(deleted(deployed.clone()), true, false));
        assert_eq!(f.releases.len(), 1);
        assert_eq!(f.releases[0].promise, Promise::Disappeared);
        let late = feed(&mut t, Event::OutOfOrder(deployed));
        assert!(late.violations[0].message.starts_with(OUT_OF_ORDER));
        assert!(late.violations[0].is_unchecked());
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

    /// Negative: the states a re-list skipped went unchecked, which fails the namespace.
    #[test]
    fn a_non_edge_across_a_relist_is_inferred_and_a_violation_in_its_namespace() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        feed(&mut t, Event::ListStarted);
        let f = feed(&mut t, Event::Listed(state("a", "Suspended", RELEASED)));
        assert_eq!(
            messages(&f),
            vec![
                "the watch re-listed and missed states of this AppWrapper, which went unchecked: phase changed from Running to Suspended, which is not an edge: the states in between (Running → Suspending → Suspended) were not observed"
            ]
        );
        assert_eq!(f.violations[0].namespace, "ns");
        let transition = &f.transitions[0];
        assert_eq!(transition.kind, TransitionKind::Inferred);
        assert_eq!(
            transition.path,
            vec![Phase::Running, Phase::Suspending, Phase::Suspended]
        );
        assert!(!transition.observed(Phase::Running, Phase::Suspending));
        assert!(!transition.observed(Phase::Suspending, Phase::Suspended));
    }

    /// Positive: across a re-list, an unchanged object, or a change one step explains, missed
    /// nothing.
    #[test]
    fn a_relist_that_missed_nothing_passes() {
        let running = versioned(state("a", "Running", QR_RD), "5");
        let mut t = tracker(&[running.clone(), state("b", "Running", QR_RD)]);
        feed(&mut t, Event::ListStarted);
        let unchanged = feed(&mut t, Event::Listed(running));
        let edge = feed(&mut t, Event::Listed(state("b", "Suspending", QR_RD)));
        feed(&mut t, Event::ListDone);
        assert_eq!(messages(&unchanged), Vec::<&str>::new());
        assert_eq!(messages(&edge), Vec::<&str>::new());
        assert_eq!(edge.transitions[0].kind, TransitionKind::Edge);
    }

    /// An unchanged resourceVersion across a re-list: the object is as it was, so even a
    /// wrong-looking difference is judged strictly (it cannot come from missed states).
    #[test]
    fn the_same_version_across_a_relist_is_judged_as_one_step() {
        let mut t = tracker(&[versioned(state("a", "Running", QR_RD), "5")]);
        feed(&mut t, Event::ListStarted);
        let f = feed(
            &mut t,
            Event::Listed(versioned(state("a", "Suspended", RELEASED), "5")),
        );
        assert_eq!(f.transitions[0].kind, TransitionKind::Invalid);
    }

    /// Negative: an AppWrapper created during the gap and already past its creation state.
    #[test]
    fn an_appwrapper_first_seen_by_a_relist_past_creation_missed_states() {
        let mut t = tracker(&[]);
        feed(&mut t, Event::ListStarted);
        let running = feed(&mut t, Event::Listed(state("a", "Running", QR_RD)));
        let created = feed(&mut t, Event::Listed(state("b", "", &[])));
        assert_eq!(
            messages(&running),
            vec![
                "the watch re-listed and missed states of this AppWrapper, which went unchecked: first seen in phase Running by a re-list: its states since its creation were not observed"
            ]
        );
        assert_eq!(messages(&created), Vec::<&str>::new());
    }

    /// Positive: what the first list finds predates the monitor, and the watch sees creations.
    #[test]
    fn an_appwrapper_first_seen_by_the_first_list_or_the_watch_passes() {
        let mut t = Tracker::default();
        feed(&mut t, Event::ListStarted);
        let listed = feed(&mut t, Event::Listed(state("a", "Running", QR_RD)));
        feed(&mut t, Event::ListDone);
        let watched = feed(&mut t, Event::Changed(state("b", "Running", QR_RD)));
        assert_eq!(messages(&listed), Vec::<&str>::new());
        assert_eq!(messages(&watched), Vec::<&str>::new());
    }

    #[test]
    fn after_a_relist_the_watch_is_strict_again() {
        let mut t = tracker(&[state("a", "Running", QR_RD)]);
        feed(&mut t, Event::ListStarted);
        feed(&mut t, Event::Listed(state("a", "Running", QR_RD)));
        feed(&mut t, Event::ListDone);
        let f = feed(&mut t, Event::Changed(state("a", "Suspended", RELEASED)));
        assert_eq!(f.violations.len(), 1, "{:?}", messages(&f));
        assert_eq!(f.transitions[0].kind, TransitionKind::Invalid);
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

    /// A release checks every component the AppWrapper ever named, not only its last status.
    #[test]
    fn a_release_carries_every_component_seen() {
        let mut t = tracker(&[with_component(state("a", "Running", QR_RD), "first", true)]);
        feed(
            &mut t,
            Event::Changed(with_component(
                state("a", "Suspending", QR_RD),
                "second",
                false,
            )),
        );
        let f = feed(&mut t, Event::Changed(state("a", "Suspended", RELEASED)));
        let seen: Vec<(String, bool)> = f.releases[0]
            .components
            .iter()
            .map(|(c, deployed)| (c.name.clone(), deployed))
            .collect();
        assert_eq!(
            seen,
            vec![("first".to_string(), true), ("second".to_string(), false)]
        );
    }

    #[test]
    fn deletion_with_resources_deployed_is_a_disappearance_to_check() {
        let mut t = tracker(&[with_component(state("a", "Running", QR_RD), "p", true)]);
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
        assert_eq!(f.releases[0].components.iter().count(), 1);
    }

    /// The last state of a deleted AppWrapper tells who removed it: with the deletion
    /// timestamp, the controller's finalizer went last; without it, but with the finalizer, the
    /// API server removed it past the finalizer, and the controller had nothing to run.
    #[test]
    fn a_removal_past_the_finalizer_is_told_from_a_disappearance() {
        let removal = |last: Snapshot| {
            let mut t = tracker(&[state("a", "Resuming", QR_RD)]);
            let f = feed(&mut t, Event::Deleted(last));
            f.releases
                .iter()
                .map(|r| r.promise.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            removal(state("a", "Resuming", QR_RD)),
            vec![Promise::RemovedPastFinalizer]
        );
        assert_eq!(
            removal(deleted(state("a", "Resuming", QR_RD))),
            vec![Promise::Disappeared]
        );
        let mut without_finalizer = state("a", "Resuming", QR_RD);
        without_finalizer.finalizers.clear();
        assert_eq!(removal(without_finalizer), vec![Promise::Disappeared]);
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

    /// Negative where something was held: its release happened unseen.
    #[test]
    fn an_appwrapper_missing_from_a_relist_disappeared() {
        let mut t = tracker(&[
            with_component(state("deployed", "Running", QR_RD), "p", true),
            state("released", "Suspended", RELEASED),
            state("kept", "Running", QR_RD),
        ]);
        feed(&mut t, Event::ListStarted);
        feed(&mut t, Event::Listed(state("kept", "Running", QR_RD)));
        let f = feed(&mut t, Event::ListDone);
        let gone: Vec<(&str, &Promise, usize)> = f
            .releases
            .iter()
            .map(|r| {
                (
                    r.state.uid.as_str(),
                    &r.promise,
                    r.components.iter().count(),
                )
            })
            .collect();
        assert_eq!(gone, vec![("deployed", &Promise::Disappeared, 1)]);
        let missed: Vec<(&str, &str)> = f
            .violations
            .iter()
            .map(|v| (v.name.as_str(), v.message.as_str()))
            .collect();
        assert_eq!(
            missed,
            vec![(
                "aw-deployed",
                "the watch re-listed and missed states of this AppWrapper, which went unchecked: it disappeared while ResourcesDeployed and QuotaReserved True (phase Running): its release was not observed"
            )]
        );
        let again = feed(
            &mut t,
            Event::Changed(state("released", "Suspended", RELEASED)),
        );
        assert!(again.transitions.is_empty(), "forgotten, so seen anew");
    }
}
