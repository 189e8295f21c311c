//! What feeds the tracker: a watch of AppWrappers, or the API server's audit log read in
//! resourceVersion order; and, for each release the tracker finds, the check of what the
//! workload left, from the log where it can tell and from the cluster otherwise.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::{WatchStreamExt as _, watcher};

use crate::audit_log::{self, Span};
use crate::leftovers::{self, Leftover, Release};
use crate::rules::Snapshot;
use crate::tracker::{self, Event};
use crate::{RETRY_PAUSE, State, Violation, audit_objects, etcd_history, findings, follow, lock};

/// Watches every AppWrapper for the whole run.
pub(crate) async fn watch(client: kube::Client, state: Arc<Mutex<State>>) {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &objects::appwrapper_resource());
    // The latency probes' AppWrappers are the harness's own, outside every scenario.
    let without_probes = format!("!{}", objects::PROBE_LABEL);
    let mut events = watcher(api, watcher::Config::default().labels(&without_probes))
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(watcher::Event::Init) => Event::ListStarted,
            Ok(watcher::Event::InitApply(object)) => match snapshot(&state, &object) {
                Some(s) => Event::Listed(s),
                None => continue,
            },
            Ok(watcher::Event::Apply(object)) => match snapshot(&state, &object) {
                Some(s) => Event::Changed(s),
                None => continue,
            },
            Ok(watcher::Event::Delete(object)) => match snapshot(&state, &object) {
                Some(s) => Event::Deleted(s),
                None => continue,
            },
            Ok(watcher::Event::InitDone) => {
                lock(&state).synced = true;
                Event::ListDone
            }
            Err(e) => {
                tracing::warn!("AppWrapper watch: {e}");
                lock(&state).watch_errors += 1;
                continue;
            }
        };
        apply(&client, &state, event, Utc::now(), None);
    }
}

/// Feeds one event to the tracker, and starts a check of each release it finds.
/// `span`: when the logged write that made the event was made (`None` from a watch).
fn apply(
    client: &kube::Client,
    state: &Arc<Mutex<State>>,
    event: Event,
    at: DateTime<Utc>,
    span: Option<Span>,
) {
    let releases = {
        let mut st = lock(state);
        st.remember(&event, at);
        let findings = st.tracker.apply(event, at);
        st.record(findings)
    };
    for release in releases {
        if release.promise == leftovers::Promise::RemovedPastFinalizer {
            tracing::warn!(
                namespace = %release.state.namespace,
                appwrapper = %release.state.name,
                "the API server removed the AppWrapper past its finalizer \
                 (kubernetes/kubernetes#77988); what it owns is the garbage collector's"
            );
        }
        tokio::spawn(check_release(
            client.clone(),
            Arc::clone(state),
            release,
            span,
        ));
    }
}

/// Reads every AppWrapper write from the audit log at `path`, in resourceVersion order, for
/// the whole run.
pub(crate) async fn read_log(
    client: kube::Client,
    path: PathBuf,
    etcd: Option<etcd_history::Etcd>,
    state: Arc<Mutex<State>>,
) {
    let mut follower = follow::Follower::new(&path);
    let mut sequencer = audit_log::Sequencer::default();
    // When the end of the log was reached: all it held then is handed on once nothing read by
    // then is held.
    let mut ends: std::collections::VecDeque<(DateTime<Utc>, Instant)> = Default::default();
    loop {
        let at_end = match follower.next().await {
            Ok(follow::Read::Line(line)) => {
                sequencer.push(audit_log::parse(&line), Instant::now());
                let objects = audit_objects::parse(&line);
                if objects != audit_objects::Line::Other {
                    lock(&state).objects.push(objects);
                }
                false
            }
            Ok(follow::Read::End) => true,
            Err(e) => {
                tracing::warn!("reading the audit log {}: {e}", path.display());
                lock(&state).watch_errors += 1;
                true
            }
        };
        let now = Instant::now();
        for ordered in sequencer.ready(now) {
            let (event, span) = match ordered {
                audit_log::Ordered::State {
                    written,
                    doubtful,
                    previous,
                } => {
                    let Some(snapshot) = scenario_state(&state, &written) else {
                        continue;
                    };
                    let lost = match (&etcd, doubtful) {
                        (Some(etcd), true) => lost_states(etcd, &written, previous).await,
                        _ => None,
                    };
                    let doubtful = doubtful && lost.is_none();
                    for stored in lost.into_iter().flatten() {
                        sequencer.read_back(uid_of(&written), stored.mod_revision);
                        apply_read_back(&client, &state, &stored.object, written.at);
                    }
                    lock(&state).written.record(written.span(), &written.object);
                    let event = Event::Logged {
                        state: snapshot,
                        gone: written.gone,
                        doubtful,
                    };
                    (event, written.span())
                }
                audit_log::Ordered::Removed { uid, span } => (Event::Vanished(uid), span),
                audit_log::Ordered::Late(written) => match scenario_state(&state, &written) {
                    Some(snapshot) => (Event::OutOfOrder(snapshot), written.span()),
                    None => continue,
                },
            };
            apply(&client, &state, event, span.completed, Some(span));
        }
        if at_end {
            ends.push_back((Utc::now(), Instant::now()));
            let mut read_at = None;
            // Everything the log held when its end was reached at `instant` has been handed on.
            while let Some(&(at, instant)) = ends.front()
                && !sequencer.holds_read_before(instant)
            {
                read_at = Some(at);
                ends.pop_front();
            }
            {
                let mut st = lock(&state);
                st.synced = true;
                if read_at.is_some() {
                    st.log_read_at = read_at;
                }
            }
            tokio::time::sleep(follow::POLL).await;
        }
    }
}

/// The state a logged write left, unless it is one of the latency probes' AppWrappers (the
/// harness's own, outside every scenario) or unreadable (a violation).
fn scenario_state(state: &Mutex<State>, written: &audit_log::Written) -> Option<Snapshot> {
    let probe = written.object["metadata"]["labels"]
        .get(objects::PROBE_LABEL)
        .is_some();
    if probe {
        return None;
    }
    snapshot_of(state, &written.object)
}

fn uid_of(written: &audit_log::Written) -> &str {
    written.object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
}

/// Hands a state read back from etcd to the tracker. When it was written is known only within
/// the writes around it: the tracker places it at the next one's completion (`at`), and its
/// release, if it is one, is judged from a read.
fn apply_read_back(
    client: &kube::Client,
    state: &Arc<Mutex<State>>,
    object: &serde_json::Value,
    at: DateTime<Utc>,
) {
    if let Some(snapshot) = snapshot_of(state, object) {
        let event = Event::Logged {
            state: snapshot,
            gone: false,
            doubtful: false,
        };
        apply(client, state, event, at, None);
    }
}

/// The states the writes before `written` left that the log does not hold (their API server
/// died between storing and logging them), from etcd's history back to the state handed on
/// before (`previous`); `None` when the history cannot tell.
async fn lost_states(
    etcd: &etcd_history::Etcd,
    written: &audit_log::Written,
    previous: Option<u64>,
) -> Option<Vec<etcd_history::Stored>> {
    let meta = &written.object["metadata"];
    let (ns, name, uid) = (
        meta["namespace"].as_str()?,
        meta["name"].as_str()?,
        uid_of(written),
    );
    let key = etcd_history::key(ns, name);
    // etcd may be restarting too: a few tries, a second apart.
    for attempt in 1..=ETCD_ATTEMPTS {
        match etcd_history::between(etcd, &key, uid, previous, written.resource_version).await {
            Ok(lost) => return lost,
            Err(e @ etcd_history::Error::Read { .. }) if attempt < ETCD_ATTEMPTS => {
                tracing::debug!("{e}; trying again");
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(e) => {
                tracing::warn!("the states before {ns}/{name}'s write are unknown: {e}");
                return None;
            }
        }
    }
    None
}

const ETCD_ATTEMPTS: usize = 10;

/// The state of an AppWrapper, or `None` (and a violation) when its status is unreadable.
fn snapshot(state: &Mutex<State>, object: &DynamicObject) -> Option<Snapshot> {
    snapshot_of(state, &objects::to_value(object))
}

fn snapshot_of(state: &Mutex<State>, value: &serde_json::Value) -> Option<Snapshot> {
    match Snapshot::from_object(value) {
        Ok(s) => Some(s),
        Err(e) => {
            let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
            lock(state).violations.push(Violation {
                namespace: text(&value["metadata"]["namespace"]),
                name: text(&value["metadata"]["name"]),
                message: format!("unreadable status: {e}"),
                before: None,
                after: objects::yaml::render_object(value),
                at: Utc::now(),
            });
            None
        }
    }
}

/// Checks a release against what the audit log shows existed when it was written (`span`),
/// and reads the cluster when the log cannot tell or shows something still there.
async fn check_release(
    client: kube::Client,
    state: Arc<Mutex<State>>,
    release: Release,
    span: Option<Span>,
) {
    use audit_objects::Verdict;
    let logged = || span.map(|s| lock(&state).objects.judge(&release, &s));
    let removed_after = |existed: &[(Leftover, bool)]| -> Vec<Leftover> {
        existed
            .iter()
            .filter(|(_, after)| *after)
            .map(|(l, _)| l.clone())
            .collect()
    };
    let from_log = match logged() {
        Some(Verdict::Clean) => Some(None),
        Some(Verdict::Existed(existed)) if existed.iter().all(|(_, after)| *after) => {
            Some(leftovers::judge_logged(&release, &removed_after(&existed)))
        }
        _ => None,
    };
    {
        let counts = &mut lock(&state).releases;
        match from_log {
            Some(_) => counts.from_log += 1,
            None => counts.read += 1,
        }
    }
    let found = match from_log {
        Some(found) => found,
        None => {
            let read = leftovers::check(&client, &release, RETRY_PAUSE).await;
            let unchecked = read
                .as_deref()
                .is_some_and(|m| m.starts_with(findings::NOT_CHECKED));
            // Judged again: a removal made after the release may have reached the log while
            // the cluster was read.
            match logged() {
                Some(Verdict::Existed(existed)) if read.is_none() || unchecked => {
                    leftovers::judge_logged(&release, &removed_after(&existed)).or(read)
                }
                Some(Verdict::Clean) if unchecked => None,
                _ => read,
            }
        }
    };
    let mut st = lock(&state);
    if let Some(message) = found {
        st.violations.push(tracker::violation(
            &release.state,
            message,
            release.before,
            Utc::now(),
        ));
    }
    if let Some(n) = st.pending.get_mut(&release.state.namespace) {
        *n = n.saturating_sub(1);
    }
}
