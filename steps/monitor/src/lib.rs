//! The invariant monitor: every AppWrapper followed for the whole run, from one of two
//! [`Source`]s. On a cluster whose API server awconf started, it reads every state each write
//! left from the API server's audit log ([`audit_log`]), so that nothing goes unseen through an
//! outage of the API server or etcd; elsewhere it watches. Each observed state is checked
//! against the condition rules of its phase, each change against the phase
//! graph and the condition timestamps, and each release (`ResourcesDeployed` or
//! `QuotaReserved` leaving True, or the AppWrapper disappearing while deployed) against what
//! of the workload existed when it was written ([`audit_objects`]) or is left of it when the
//! log cannot tell ([`leftovers`]); `feed` runs both. A re-list of the watch may skip states:
//! a change that one step does not explain is then a violation too, since the states in
//! between went unchecked (see [`tracker`]); a watch error alone loses nothing, as the watch
//! resumes from its last resourceVersion or re-lists. Violations are kept per namespace, so
//! that the scenario owning the namespace fails; the phase changes seen feed the coverage
//! picture of the report, and the observed states over time (bounded) the timelines of its
//! scenario pages.

pub mod audit_log;
pub mod audit_objects;
pub mod etcd_history;
mod feed;
pub mod findings;
pub mod follow;
pub mod graph;
pub mod history;
pub mod leftovers;
pub mod rules;
pub mod tracker;
pub mod written_states;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use appwrapper_controller::api::Phase;
use chrono::{DateTime, Utc};
use tokio::task::JoinHandle;

pub use findings::{Transition, TransitionKind, Violation};
use history::{AppWrapperHistory, History};
use leftovers::Release;
use tracker::{Event, Findings, Tracker};

/// How long a failed lookup of a release check waits before it is tried again.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// How often each edge of the diagram was seen taken.
#[derive(Clone, Debug)]
pub struct EdgeCoverage {
    pub from: Phase,
    pub to: Phase,
    /// Seen as one watch event to the next.
    pub direct: usize,
    /// Inferred from a change whose intermediate states a re-list skipped.
    pub inferred: usize,
    pub namespaces: BTreeSet<String>,
    /// Part of the drawn diagram (as opposed to, say, Suspended → Terminating).
    pub in_diagram: bool,
}

/// Where the monitor reads the AppWrappers' states from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A watch: a re-list after an outage skips the states in between.
    Watch,
    /// The API server's audit log at `log`, with every AppWrapper write's response object
    /// (see `clusters::providers::local::audit`), and where awconf started that API server's
    /// etcd, its URL: the states of a write the log never finished (the API server killed
    /// between storing and logging it) are read back from etcd's history
    /// ([`etcd_history`]).
    AuditLog { log: PathBuf, etcd: Option<String> },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Watch => write!(f, "a watch on AppWrappers"),
            Source::AuditLog { log, .. } => {
                write!(f, "the API server's audit log ({})", log.display())
            }
        }
    }
}

#[derive(Default)]
struct State {
    tracker: Tracker,
    history: History,
    violations: Vec<Violation>,
    transitions: Vec<Transition>,
    /// Release checks still running, per namespace.
    pending: HashMap<String, usize>,
    synced: bool,
    watch_errors: usize,
    /// When the audit log was last read to its end with nothing held back.
    log_read_at: Option<DateTime<Utc>>,
    /// The lives of pods and wrapped objects, from the audit log.
    objects: audit_objects::ObjectLog,
    releases: ReleaseChecks,
    written: written_states::WrittenStates,
    /// What other monitors (scenarios' own clusters') could not check.
    absorbed_unchecked: usize,
}

impl State {
    fn remember(&mut self, event: &Event, at: DateTime<Utc>) {
        match event {
            Event::Listed(s) | Event::Changed(s) => self.history.observe(s, at, false),
            Event::Deleted(s) => self.history.observe(s, at, true),
            Event::Logged { state, gone, .. } => self.history.observe(state, at, *gone),
            Event::ListStarted | Event::ListDone | Event::OutOfOrder(_) | Event::Vanished(_) => {}
        }
    }

    fn record(&mut self, findings: Findings) -> Vec<Release> {
        self.violations.extend(findings.violations);
        self.transitions.extend(findings.transitions);
        for release in &findings.releases {
            *self
                .pending
                .entry(release.state.namespace.clone())
                .or_insert(0) += 1;
        }
        findings.releases
    }
}

/// How many releases were judged from the audit log alone, and how many by reading the
/// cluster (a watch's, or those the log could not settle).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReleaseChecks {
    pub from_log: usize,
    pub read: usize,
}

impl std::fmt::Display for ReleaseChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} releases judged from the log alone",
            self.from_log,
            self.from_log + self.read
        )
    }
}

pub struct Monitor {
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
    source: Source,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock cannot leave the state half-written in a way that
    // matters to the reports, so a poisoned lock is used as is.
    state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Monitor {
    /// Starts following every AppWrapper from `source` and waits (up to `timeout`) until it
    /// has caught up: the watch's initial list, or the audit log read to its end. `client`
    /// reads what a release left behind, and is the watch's.
    pub async fn start(
        client: kube::Client,
        source: Source,
        timeout: Duration,
    ) -> anyhow::Result<Monitor> {
        let state = Arc::new(Mutex::new(State::default()));
        let task = match &source {
            Source::Watch => tokio::spawn(feed::watch(client, Arc::clone(&state))),
            Source::AuditLog { log, etcd } => tokio::spawn(feed::read_log(
                client,
                log.clone(),
                etcd.as_deref().map(etcd_history::Etcd::new),
                Arc::clone(&state),
            )),
        };
        let monitor = Monitor {
            state,
            task,
            source,
        };
        let deadline = Instant::now() + timeout;
        while !lock(&monitor.state).synced {
            if Instant::now() >= deadline {
                anyhow::bail!("{} did not catch up within {timeout:?}", monitor.source);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(monitor)
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// What it could not check in the whole run (states a re-list skipped, a write of unknown
    /// outcome may have left, or a release whose leftovers it could not read).
    pub fn unchecked(&self) -> Vec<Violation> {
        lock(&self.state)
            .violations
            .iter()
            .filter(|v| v.is_unchecked())
            .cloned()
            .collect()
    }

    /// How many changes it, and the monitors it absorbed, could not check.
    pub fn unchecked_count(&self) -> usize {
        let st = lock(&self.state);
        st.violations.iter().filter(|v| v.is_unchecked()).count() + st.absorbed_unchecked
    }

    /// How the releases were checked.
    pub fn release_checks(&self) -> ReleaseChecks {
        lock(&self.state).releases
    }

    pub fn stop(&self) {
        self.task.abort();
    }

    pub fn violations_in(&self, namespace: &str) -> Vec<Violation> {
        lock(&self.state)
            .violations
            .iter()
            .filter(|v| v.namespace == namespace)
            .cloned()
            .collect()
    }

    pub fn transitions_in(&self, namespace: &str) -> Vec<Transition> {
        lock(&self.state)
            .transitions
            .iter()
            .filter(|t| t.namespace == namespace)
            .cloned()
            .collect()
    }

    /// Whether the monitor observed the AppWrapper with condition `kind` at `status`, with
    /// `reason` when given: a state that may be too brief for a step to poll.
    pub fn saw_condition(
        &self,
        namespace: &str,
        name: &str,
        kind: &str,
        status: &str,
        reason: Option<&str>,
    ) -> bool {
        lock(&self.state).history.any(namespace, name, |o| {
            o.condition(kind)
                .is_some_and(|c| c.status == status && reason.is_none_or(|r| c.reason == r))
        })
    }

    /// When `ResourcesDeployed` of the AppWrapper last became True, as the monitor last saw
    /// it True: the deployment time, which its conditions no longer show once its resources
    /// are gone.
    pub fn last_deployed(&self, namespace: &str, name: &str) -> Option<DateTime<Utc>> {
        lock(&self.state).history.last_deployed(namespace, name)
    }

    /// Takes what was observed of the AppWrappers of `namespace` over time (for its
    /// timelines); the monitor forgets it.
    pub fn take_history(&self, namespace: &str) -> Vec<AppWrapperHistory> {
        let mut st = lock(&self.state);
        st.written.forget(namespace);
        st.history.take(namespace)
    }

    /// The last states the AppWrapper's writes left, oldest first, each with when its write
    /// was made; `None` when the monitor watches, and so cannot tell when a write was made.
    pub fn written_states(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<Vec<(audit_log::Span, serde_json::Value)>> {
        match self.source {
            Source::AuditLog { .. } => Some(lock(&self.state).written.of(namespace, name)),
            Source::Watch => None,
        }
    }

    /// Whether the AppWrapper was seen taking the edge `from → to` directly (a change
    /// inferred across a re-list does not count).
    pub fn saw(&self, namespace: &str, name: &str, from: Phase, to: Phase) -> bool {
        lock(&self.state)
            .transitions
            .iter()
            .any(|t| t.namespace == namespace && t.name == name && t.observed(from, to))
    }

    /// Whether the AppWrapper was seen entering `phase` at or after `since`: a phase the
    /// controller holds only briefly (a reset pause of two seconds) is missed by a poll on a
    /// loaded machine, never by the watch.
    pub fn entered(&self, namespace: &str, name: &str, phase: Phase, since: DateTime<Utc>) -> bool {
        entered(
            &lock(&self.state).transitions,
            namespace,
            name,
            phase,
            since,
        )
    }

    /// Waits until what was written before the call has been read (from the audit log) and
    /// the checks started for `namespace` have finished.
    pub async fn settle(&self, namespace: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let called = Utc::now();
        if matches!(self.source, Source::AuditLog { .. }) {
            while lock(&self.state).log_read_at.is_none_or(|at| at < called)
                && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        while lock(&self.state)
            .pending
            .get(namespace)
            .copied()
            .unwrap_or(0)
            > 0
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Errors of the watch, or of reading the audit log, so far in the whole run (an error
    /// belongs to no namespace).
    pub fn watch_errors(&self) -> usize {
        lock(&self.state).watch_errors
    }

    /// The phase changes of the AppWrappers of `namespace` inferred across a re-list (each is
    /// also a violation).
    pub fn inferred_in(&self, namespace: &str) -> usize {
        lock(&self.state)
            .transitions
            .iter()
            .filter(|t| t.namespace == namespace && t.kind == TransitionKind::Inferred)
            .count()
    }

    /// Takes over the phase changes `other` saw (a scenario's own cluster's monitor), so that
    /// this one's coverage counts them, and counts what it could not check.
    pub fn absorb(&self, other: &Monitor) {
        let taken = std::mem::take(&mut lock(&other.state).transitions);
        let unchecked = other.unchecked_count();
        let releases = other.release_checks();
        let mut st = lock(&self.state);
        st.transitions.extend(taken);
        st.absorbed_unchecked += unchecked;
        st.releases.from_log += releases.from_log;
        st.releases.read += releases.read;
    }

    /// Every edge of the diagram, and any other change seen, with how often it was taken.
    pub fn coverage(&self) -> Vec<EdgeCoverage> {
        coverage(&lock(&self.state).transitions)
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A change into `phase` seen directly (a path inferred across a re-list is a guess) at or
/// after `since`.
fn entered(
    transitions: &[Transition],
    namespace: &str,
    name: &str,
    phase: Phase,
    since: DateTime<Utc>,
) -> bool {
    transitions.iter().any(|t| {
        t.namespace == namespace
            && t.name == name
            && t.kind == TransitionKind::Edge
            && t.to == phase
            && t.at >= since
    })
}

fn coverage(transitions: &[Transition]) -> Vec<EdgeCoverage> {
    let mut edges: Vec<EdgeCoverage> = graph::EDGES
        .iter()
        .map(|&(from, to)| EdgeCoverage {
            from,
            to,
            direct: 0,
            inferred: 0,
            namespaces: BTreeSet::new(),
            in_diagram: true,
        })
        .collect();
    for t in transitions {
        let direct = t.direct();
        for (from, to) in t.edges() {
            let index = match edges.iter().position(|e| e.from == from && e.to == to) {
                Some(i) => i,
                None => {
                    edges.push(EdgeCoverage {
                        from,
                        to,
                        direct: 0,
                        inferred: 0,
                        namespaces: BTreeSet::new(),
                        in_diagram: false,
                    });
                    edges.len() - 1
                }
            };
            let edge = &mut edges[index];
            if direct {
                edge.direct += 1;
            } else {
                edge.inferred += 1;
            }
            edge.namespaces.insert(t.namespace.clone());
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use Phase::*;

    fn transition(kind: TransitionKind, path: Vec<Phase>) -> Transition {
        Transition {
            namespace: "ns".into(),
            name: "aw".into(),
            from: path[0],
            to: path[path.len() - 1],
            kind,
            path,
            at: Utc::now(),
        }
    }

    fn counts(edges: &[EdgeCoverage], from: Phase, to: Phase) -> (usize, usize, bool) {
        edges
            .iter()
            .find(|e| e.from == from && e.to == to)
            .map(|e| (e.direct, e.inferred, e.in_diagram))
            .unwrap_or_default()
    }

    #[test]
    fn what_could_not_be_checked_is_told_from_what_broke_a_rule() {
        let violation = |message: &str| Violation {
            namespace: "ns".into(),
            name: "aw".into(),
            message: message.into(),
            before: None,
            after: String::new(),
            at: Utc::now(),
        };
        for (message, unchecked) in [
            (format!("{}: phase changed", findings::MISSED), true),
            (
                format!("{} after x (3 attempts): refused", findings::NOT_CHECKED),
                true,
            ),
            ("Running with QuotaReserved False".to_string(), false),
            (
                "a pod was left after ResourcesDeployed stopped being True".to_string(),
                false,
            ),
        ] {
            assert_eq!(violation(&message).is_unchecked(), unchecked, "{message}");
        }
    }

    #[test]
    fn coverage_tells_seen_from_inferred_edges() {
        let edges = coverage(&[
            transition(TransitionKind::Edge, vec![Running, Suspending]),
            transition(
                TransitionKind::Inferred,
                vec![Running, Suspending, Suspended],
            ),
            transition(TransitionKind::Invalid, vec![Running, Suspended]),
        ]);
        assert_eq!(counts(&edges, Running, Suspending), (1, 1, true));
        assert_eq!(counts(&edges, Suspending, Suspended), (0, 1, true));
        assert_eq!(counts(&edges, Running, Suspended), (1, 0, false));
        assert_eq!(counts(&edges, Empty, Suspended), (0, 0, true));
    }

    #[test]
    fn descriptions_say_what_the_monitor_made_of_a_change() {
        let inferred = transition(
            TransitionKind::Inferred,
            vec![Running, Suspending, Suspended],
        );
        assert_eq!(
            inferred.describe(),
            "Running → Suspending → Suspended (inferred across a re-list: states missed, violation)"
        );
        let invalid = transition(TransitionKind::Invalid, vec![Running, Suspended]);
        assert!(invalid.describe().ends_with("violation)"));
    }

    #[rstest::rstest]
    #[case::seen_after_the_step_began(TransitionKind::Edge, "aw", Resetting, 1, true)]
    #[case::seen_before_it(TransitionKind::Edge, "aw", Resetting, -1, false)]
    #[case::into_another_phase(TransitionKind::Edge, "aw", Resuming, 1, false)]
    #[case::of_another_appwrapper(TransitionKind::Edge, "other", Resetting, 1, false)]
    #[case::inferred_across_a_relist(TransitionKind::Inferred, "aw", Resetting, 1, false)]
    fn a_brief_phase_counts_when_seen_entered_since_the_step_began(
        #[case] kind: TransitionKind,
        #[case] name: &str,
        #[case] to: Phase,
        #[case] offset_seconds: i64,
        #[case] counts: bool,
    ) {
        let since = Utc::now();
        let mut seen = transition(kind, vec![Running, to]);
        seen.name = name.into();
        seen.at = since + chrono::Duration::seconds(offset_seconds);
        assert_eq!(entered(&[seen], "ns", "aw", Resetting, since), counts);
    }
}
