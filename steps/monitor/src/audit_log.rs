//! Every state a write left on an AppWrapper, from the API server's audit log: the response
//! object of each create, update, patch, delete and deletecollection of `appwrappers` and
//! `appwrappers/status` (the local cluster's policy logs them at RequestResponse). Pure over
//! the log's lines: [`parse`] reads one, and a [`Sequencer`] puts what they say in
//! resourceVersion order.
//!
//! The log is written as requests complete, so two writes to one object may land in it out of
//! the order etcd committed them; the sequencer holds each state a moment before it hands it
//! on, sorted by resourceVersion, and longer while a write to its object that was received
//! before it completed has not completed in the log: in blocking mode the log has that write's
//! RequestReceived line before the later write's ResponseComplete, however loaded the machine.
//! A write that ended in a server error, or that the API server never finished (it was killed),
//! may or may not have been committed: the next state of its object is marked doubtful, so
//! that states it may have left count as unchecked rather than as skipped by the controller.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

const GROUP: &str = "workload.codeflare.dev";
const RESOURCE: &str = "appwrappers";
const WRITES: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// An object by namespace and name; an empty name stands for the whole namespace (a
/// deletecollection).
pub type Key = (String, String);

/// A state a write left.
#[derive(Clone, Debug, PartialEq)]
pub struct Written {
    pub object: Value,
    pub resource_version: u64,
    /// The write removed the object (a deletion with no finalizer left).
    pub gone: bool,
    /// When the write completed (the API server's clock).
    pub at: DateTime<Utc>,
    /// When the API server received it.
    pub received: DateTime<Utc>,
}

impl Written {
    /// When the write was made.
    pub fn span(&self) -> Span {
        Span {
            received: self.received,
            completed: self.at,
        }
    }
}

/// From the receipt of a write to its completion: it took effect in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub received: DateTime<Utc>,
    pub completed: DateTime<Utc>,
}

impl Span {
    /// Took effect before `other` did, for certain.
    pub fn before(&self, other: &Span) -> bool {
        self.completed < other.received
    }

    /// Took effect after `other` did, for certain.
    pub fn after(&self, other: &Span) -> bool {
        self.received > other.completed
    }
}

/// What one line of the log says about AppWrappers.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// A write was received.
    Received {
        id: String,
        key: Key,
        at: DateTime<Utc>,
    },
    /// A write completed and left these states (a deletecollection leaves several).
    Wrote { id: String, states: Vec<Written> },
    /// A deletion removed the object at once, and the log shows its uid but not its state.
    Removed { id: String, uid: String, span: Span },
    /// A write completed without leaving a state: refused (`unknown` false), or ended in a
    /// server error, after which it may or may not have been committed.
    Failed { id: String, unknown: bool },
    /// Not about an AppWrapper write.
    Other,
}

/// Reads one line of the log (JSON, one audit event).
pub fn parse(line: &str) -> Line {
    // Most lines are other requests: not worth parsing.
    if !line.contains("\"appwrappers\"") {
        return Line::Other;
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return Line::Other;
    };
    let object_ref = &event["objectRef"];
    let verb = event["verb"].as_str().unwrap_or_default();
    if object_ref["apiGroup"] != GROUP
        || object_ref["resource"] != RESOURCE
        || !WRITES.contains(&verb)
    {
        return Line::Other;
    }
    let id = event["auditID"].as_str().unwrap_or_default().to_string();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    match event["stage"].as_str() {
        Some("RequestReceived") if verb != "create" => match time(&event["stageTimestamp"]) {
            Some(at) => Line::Received {
                id,
                key: (text(&object_ref["namespace"]), text(&object_ref["name"])),
                at,
            },
            None => Line::Other,
        },
        Some("ResponseComplete") => completed(id, verb, &event),
        _ => Line::Other,
    }
}

fn completed(id: String, verb: &str, event: &Value) -> Line {
    let code = event["responseStatus"]["code"].as_u64().unwrap_or(0);
    let response = &event["responseObject"];
    let span = span_of(event);
    // A custom resource deleted at once is answered with a Status naming its uid, not the
    // object.
    if let (true, "Status", Some(uid), Some(span)) = (
        (200..300).contains(&code),
        response["kind"].as_str().unwrap_or_default(),
        response["details"]["uid"].as_str(),
        span,
    ) {
        return Line::Removed {
            id,
            uid: uid.to_string(),
            span,
        };
    }
    let Some(span) = span.filter(|_| (200..300).contains(&code) && response["kind"] != "Status")
    else {
        return Line::Failed {
            id,
            unknown: !(400..500).contains(&code),
        };
    };
    let deleting = matches!(verb, "delete" | "deletecollection");
    let objects: Vec<&Value> = match response["items"].as_array() {
        Some(items) => items.iter().collect(),
        None => vec![response],
    };
    let states = objects
        .into_iter()
        .filter_map(|object| {
            let meta = &object["metadata"];
            let resource_version = meta["resourceVersion"].as_str()?.parse().ok()?;
            let finalizers = meta["finalizers"].as_array().is_some_and(|f| !f.is_empty());
            let gone = !finalizers && (deleting || !meta["deletionTimestamp"].is_null());
            Some(Written {
                object: object.clone(),
                resource_version,
                gone,
                at: span.completed,
                received: span.received,
            })
        })
        .collect();
    Line::Wrote { id, states }
}

/// When a completed write was received and when it completed.
pub fn span_of(event: &Value) -> Option<Span> {
    Some(Span {
        received: time(&event["requestReceivedTimestamp"])?,
        completed: time(&event["stageTimestamp"])?,
    })
}

pub fn time(value: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(value.as_str()?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// How long a state is held for an earlier one to catch up with it in the log.
pub const HOLD: Duration = Duration::from_millis(500);

/// How long a state is held at most while a write to its object, received before it completed,
/// has no outcome in the log yet: on a loaded machine the log writes a completion seconds after
/// a later one's (more than 10 s after it once, on 2 cores at load 20). After that the state
/// goes on, doubtful, and the late one is counted unchecked. A scenario's end waits for what
/// is held ([`SETTLE`]).
pub const OPEN_HOLD: Duration = Duration::from_secs(30);

/// How long a scenario's end waits for the monitor to have judged its namespace's states: the
/// longest a state is held, and a little more.
pub const SETTLE: Duration = Duration::from_secs(40);

/// A write received this long ago and never completed in the log died with the API server
/// (requests time out after a minute).
pub const ABANDONED: Duration = Duration::from_secs(70);

/// What the sequencer hands on, in resourceVersion order.
#[derive(Clone, Debug, PartialEq)]
pub enum Ordered {
    State {
        written: Written,
        /// An earlier write to the object has no outcome in the log.
        doubtful: bool,
        /// The resourceVersion of the object's state handed on before this one.
        previous: Option<u64>,
    },
    /// A state older than one already handed on for the same object.
    Late(Written),
    /// The object with this uid is gone; its last state is the last one handed on.
    Removed { uid: String, span: Span },
}

struct Pending {
    key: Key,
    received: DateTime<Utc>,
    read: Instant,
}

/// Puts the states of the log in resourceVersion order and marks those that may follow an
/// unseen one.
#[derive(Default)]
pub struct Sequencer {
    held: Vec<(Instant, Written)>,
    /// Removals known by uid only: handed on after every state held with them.
    removed: Vec<(Instant, String, Span)>,
    /// Writes received and not completed yet, by audit ID.
    open: HashMap<String, Pending>,
    /// Writes whose outcome the log will never show: received when.
    unknown: Vec<(Key, DateTime<Utc>)>,
    /// The last resourceVersion handed on, per uid.
    last: HashMap<String, u64>,
    /// States read back from etcd's history, by uid and resourceVersion: the log may still
    /// write one of them late, when its write was slow rather than lost.
    read_back: HashSet<(String, u64)>,
}

impl Sequencer {
    pub fn push(&mut self, line: Line, read: Instant) {
        match line {
            Line::Received { id, key, at } => {
                self.open.insert(
                    id,
                    Pending {
                        key,
                        received: at,
                        read,
                    },
                );
            }
            Line::Wrote { id, states } => {
                self.open.remove(&id);
                self.held.extend(states.into_iter().map(|s| (read, s)));
            }
            Line::Removed { id, uid, span } => {
                self.open.remove(&id);
                self.removed.push((read, uid, span));
            }
            Line::Failed { id, unknown } => {
                if let Some(pending) = self.open.remove(&id)
                    && unknown
                {
                    self.unknown.push((pending.key, pending.received));
                }
            }
            Line::Other => {}
        }
    }

    /// A state of the object with `uid` known from elsewhere, handed on in its place.
    pub fn read_back(&mut self, uid: &str, resource_version: u64) {
        self.read_back.insert((uid.to_string(), resource_version));
    }

    /// Whether states are still held.
    pub fn holding(&self) -> bool {
        !self.held.is_empty() || !self.removed.is_empty()
    }

    /// Whether a state or removal read at or before `instant` is still held.
    pub fn holds_read_before(&self, instant: Instant) -> bool {
        self.held.iter().any(|(read, _)| *read <= instant)
            || self.removed.iter().any(|(read, _, _)| *read <= instant)
    }

    /// The states read at least [`HOLD`] before `now`, in resourceVersion order; but none of an
    /// object while one of its states waits, up to [`OPEN_HOLD`], for a write received before
    /// it completed.
    pub fn ready(&mut self, now: Instant) -> Vec<Ordered> {
        let abandoned: Vec<String> = self
            .open
            .iter()
            .filter(|(_, p)| now.saturating_duration_since(p.read) >= ABANDONED)
            .map(|(id, _)| id.clone())
            .collect();
        for id in abandoned {
            if let Some(p) = self.open.remove(&id) {
                self.unknown.push((p.key, p.received));
            }
        }
        let waiting: HashSet<String> = self
            .held
            .iter()
            .filter(|(read, written)| {
                now.saturating_duration_since(*read) < OPEN_HOLD && open_before(&self.open, written)
            })
            .map(|(_, written)| uid_of(written).to_string())
            .collect();
        let (mut ready, held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(read, written)| {
                now.saturating_duration_since(*read) >= HOLD && !waiting.contains(uid_of(written))
            });
        self.held = held;
        ready.sort_by_key(|(_, w)| w.resource_version);
        let mut ordered: Vec<Ordered> = ready
            .into_iter()
            .filter_map(|(_, written)| self.order(written))
            .collect();
        let (gone, removed): (Vec<_>, Vec<_>) = std::mem::take(&mut self.removed)
            .into_iter()
            .partition(|(read, uid, _)| {
                now.saturating_duration_since(*read) >= HOLD && !waiting.contains(uid)
            });
        self.removed = removed;
        ordered.extend(gone.into_iter().map(|(_, uid, span)| {
            self.last.insert(uid.clone(), u64::MAX);
            Ordered::Removed { uid, span }
        }));
        ordered
    }

    fn order(&mut self, written: Written) -> Option<Ordered> {
        let uid = uid_of(&written).to_string();
        let previous = self.last.get(&uid).copied();
        match previous {
            // A write that changed nothing leaves the same version.
            Some(last) if last == written.resource_version => return None,
            Some(last) if last > written.resource_version => {
                let known = self.read_back.remove(&(uid, written.resource_version));
                return (!known).then_some(Ordered::Late(written));
            }
            _ => {}
        }
        self.last.insert(uid, written.resource_version);
        let key = key_of(&written.object);
        let open = open_before(&self.open, &written);
        let count = self.unknown.len();
        self.unknown
            .retain(|(k, received)| !(covers(k, &key) && *received < written.at));
        let doubtful = open || self.unknown.len() < count;
        Some(Ordered::State {
            written,
            doubtful,
            previous,
        })
    }
}

/// Whether a write to `written`'s object (or its namespace) was received before `written`
/// completed and has no outcome in the log yet.
fn open_before(open: &HashMap<String, Pending>, written: &Written) -> bool {
    let key = key_of(&written.object);
    open.values()
        .any(|p| covers(&p.key, &key) && p.received < written.at)
}

/// Whether a write to `write` reaches the object `object` (an empty name: the namespace).
fn covers(write: &Key, object: &Key) -> bool {
    write.0 == object.0 && (write.1.is_empty() || write.1 == object.1)
}

fn uid_of(written: &Written) -> &str {
    written.object["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
}

fn key_of(object: &Value) -> Key {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    (
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(stage: &str, verb: &str, id: &str, code: u64, object: Value) -> String {
        json!({
            "kind": "Event", "auditID": id, "stage": stage, "verb": verb,
            "objectRef": {"apiGroup": GROUP, "resource": RESOURCE, "subresource": "status",
                          "namespace": "ns", "name": "aw"},
            "responseStatus": {"code": code},
            "responseObject": object,
            "requestReceivedTimestamp": "2026-12-03T08:00:00.000000Z",
            "stageTimestamp": "2026-12-03T08:00:00.000001Z",
        })
        .to_string()
    }

    fn appwrapper(rv: &str, finalizers: &[&str], deleting: bool) -> Value {
        let mut object = json!({
            "kind": "AppWrapper",
            "metadata": {"name": "aw", "namespace": "ns", "uid": "u1", "resourceVersion": rv,
                         "finalizers": finalizers},
        });
        if deleting {
            object["metadata"]["deletionTimestamp"] = json!("2026-12-03T08:00:00Z");
        }
        object
    }

    fn states(line: Line) -> Vec<(u64, bool)> {
        match line {
            Line::Wrote { states, .. } => states
                .iter()
                .map(|s| (s.resource_version, s.gone))
                .collect(),
            other => panic!("not a write: {other:?}"),
        }
    }

    #[rstest::rstest]
    #[case::a_status_patch("patch", appwrapper("7", &["f"], false), vec![(7, false)])]
    #[case::a_deletion_the_finalizer_holds("delete", appwrapper("8", &["f"], true), vec![(8, false)])]
    #[case::a_deletion_with_no_finalizer("delete", appwrapper("8", &[], false), vec![(8, true)])]
    #[case::the_finalizer_removed_while_deleting("update", appwrapper("9", &[], true), vec![(9, true)])]
    #[case::a_namespace_emptied("deletecollection", json!({"kind": "AppWrapperList", "items": [
        appwrapper("10", &[], false), appwrapper("11", &["f"], true)]}), vec![(10, true), (11, false)])]
    fn a_completed_write_gives_the_states_it_left(
        #[case] verb: &str,
        #[case] object: Value,
        #[case] expected: Vec<(u64, bool)>,
    ) {
        assert_eq!(
            states(parse(&event("ResponseComplete", verb, "a", 200, object))),
            expected
        );
    }

    #[test]
    fn a_custom_resource_deleted_at_once_is_removed_by_uid() {
        let status = json!({"kind": "Status", "status": "Success",
                            "details": {"name": "aw", "kind": "appwrappers", "uid": "u1"}});
        let line = parse(&event("ResponseComplete", "delete", "a", 200, status));
        assert!(
            matches!(&line, Line::Removed { uid, .. } if uid == "u1"),
            "{line:?}"
        );
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(line, t0);
        s.push(wrote("b", written(12, 20)), t0);
        let ready = s.ready(t0 + HOLD);
        assert!(matches!(ready[0], Ordered::State { .. }));
        assert!(matches!(&ready[1], Ordered::Removed { uid, .. } if uid == "u1"));
        s.push(wrote("c", written(13, 30)), t0 + HOLD);
        assert_eq!(
            summary(s.ready(t0 + HOLD * 2)),
            [(13, "late")],
            "nothing follows a removal"
        );
    }

    #[rstest::rstest]
    #[case::a_conflict(409, false)]
    #[case::a_refusal_by_the_webhook(400, false)]
    #[case::a_timeout_of_etcd(504, true)]
    #[case::an_internal_error(500, true)]
    fn a_failed_write_is_unknown_only_on_a_server_error(#[case] code: u64, #[case] unknown: bool) {
        let status = json!({"kind": "Status", "code": code});
        assert_eq!(
            parse(&event("ResponseComplete", "patch", "a", code, status)),
            Line::Failed {
                id: "a".into(),
                unknown
            }
        );
    }

    #[test]
    fn reads_and_writes_of_other_resources_are_not_ours() {
        let mut other = serde_json::from_str::<Value>(&event(
            "ResponseComplete",
            "patch",
            "a",
            200,
            appwrapper("1", &[], false),
        ))
        .unwrap();
        other["objectRef"]["resource"] = json!("workloads");
        assert_eq!(parse(&other.to_string()), Line::Other);
        let get = event(
            "ResponseComplete",
            "get",
            "a",
            200,
            appwrapper("1", &[], false),
        );
        assert_eq!(parse(&get), Line::Other);
        assert_eq!(parse("{\"cut short"), Line::Other);
    }

    fn written(rv: u64, at_ms: i64) -> Written {
        Written {
            object: appwrapper(&rv.to_string(), &["f"], false),
            resource_version: rv,
            gone: false,
            at: base() + chrono::TimeDelta::milliseconds(at_ms),
            received: base() + chrono::TimeDelta::milliseconds(at_ms - 1),
        }
    }

    fn base() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-03T08:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn wrote(id: &str, w: Written) -> Line {
        Line::Wrote {
            id: id.into(),
            states: vec![w],
        }
    }

    fn received(id: &str, at_ms: i64) -> Line {
        Line::Received {
            id: id.into(),
            key: ("ns".into(), "aw".into()),
            at: base() + chrono::TimeDelta::milliseconds(at_ms),
        }
    }

    fn summary(ordered: Vec<Ordered>) -> Vec<(u64, &'static str)> {
        ordered
            .into_iter()
            .map(|o| match o {
                Ordered::State {
                    written, doubtful, ..
                } => (
                    written.resource_version,
                    if doubtful { "doubtful" } else { "sure" },
                ),
                Ordered::Late(w) => (w.resource_version, "late"),
                Ordered::Removed { .. } => (u64::MAX, "removed"),
            })
            .collect()
    }

    #[test]
    fn states_are_handed_on_in_resource_version_order_once_held() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(wrote("b", written(12, 20)), t0);
        s.push(wrote("a", written(11, 10)), t0 + Duration::from_millis(100));
        s.push(wrote("c", written(12, 20)), t0 + Duration::from_millis(100));
        assert!(s.ready(t0 + HOLD / 2).is_empty());
        assert_eq!(
            summary(s.ready(t0 + HOLD + Duration::from_millis(100))),
            [(11, "sure"), (12, "sure")],
            "sorted, and a write that changed nothing is one state"
        );
        s.push(wrote("d", written(10, 5)), t0 + HOLD * 2);
        assert_eq!(summary(s.ready(t0 + HOLD * 4)), [(10, "late")]);
        assert!(!s.holding());
    }

    #[test]
    fn a_state_read_back_and_then_logged_late_is_not_late() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(wrote("b", written(12, 20)), t0);
        assert_eq!(summary(s.ready(t0 + HOLD)), [(12, "sure")]);
        s.read_back("u1", 11);
        s.push(wrote("a", written(11, 10)), t0 + HOLD);
        s.push(wrote("c", written(10, 5)), t0 + HOLD);
        assert_eq!(
            summary(s.ready(t0 + HOLD * 3)),
            [(10, "late")],
            "the state read back is dropped; another late one is still late"
        );
    }

    #[test]
    fn a_state_after_a_write_of_unknown_outcome_is_doubtful() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(received("x", 0), t0);
        s.push(
            Line::Failed {
                id: "x".into(),
                unknown: true,
            },
            t0,
        );
        s.push(received("y", 5), t0);
        s.push(
            Line::Failed {
                id: "y".into(),
                unknown: false,
            },
            t0,
        );
        s.push(wrote("z", written(20, 50)), t0);
        s.push(wrote("w", written(21, 60)), t0);
        assert_eq!(
            summary(s.ready(t0 + HOLD)),
            [(20, "doubtful"), (21, "sure")],
            "the doubt is spent on the first state after it; a refused write leaves none"
        );
    }

    #[test]
    fn a_write_the_api_server_never_finished_makes_the_next_state_doubtful() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(received("killed", 0), t0);
        s.push(wrote("next", written(30, 100)), t0);
        assert!(
            s.ready(t0 + HOLD).is_empty(),
            "held while the earlier write may still be logged"
        );
        assert!(s.holds_read_before(t0));
        assert_eq!(
            summary(s.ready(t0 + OPEN_HOLD)),
            [(30, "doubtful")],
            "still open when the state is handed on"
        );
        s.push(wrote("later", written(31, 200)), t0 + ABANDONED);
        assert_eq!(
            summary(s.ready(t0 + ABANDONED + HOLD)),
            [(31, "doubtful")],
            "abandoned: its outcome is unknown"
        );
    }

    #[test]
    fn a_state_waits_for_a_write_received_before_it_completed_however_late_its_line() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(received("slow", 0), t0);
        s.push(received("fast", 5), t0);
        s.push(wrote("fast", written(12, 20)), t0);
        s.push(other_object(13, 20), t0);
        assert_eq!(
            summary(s.ready(t0 + HOLD * 4)),
            [(13, "sure")],
            "another object goes on; this one waits for the slow write"
        );
        s.push(wrote("slow", written(11, 10)), t0 + HOLD * 6);
        assert_eq!(
            summary(s.ready(t0 + HOLD * 7)),
            [(11, "sure"), (12, "sure")],
            "both in order once the slow write is logged, seconds after the fast one"
        );
        assert!(!s.holding());
    }

    #[test]
    fn a_write_received_after_a_state_completed_does_not_hold_it() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(wrote("first", written(12, 20)), t0);
        s.push(received("next", 30), t0);
        assert_eq!(summary(s.ready(t0 + HOLD)), [(12, "sure")]);
    }

    #[test]
    fn an_earlier_state_of_a_waiting_object_waits_with_it() {
        let t0 = Instant::now();
        let mut s = Sequencer::default();
        s.push(wrote("early", written(12, 10)), t0);
        s.push(received("slow", 15), t0);
        s.push(wrote("late", written(14, 30)), t0);
        assert!(
            s.ready(t0 + HOLD * 2).is_empty(),
            "the slow write may sit between them"
        );
        s.push(wrote("slow", written(13, 25)), t0 + HOLD * 3);
        assert_eq!(
            summary(s.ready(t0 + HOLD * 4)),
            [(12, "sure"), (13, "sure"), (14, "sure")]
        );
    }

    fn other_object(rv: u64, at_ms: i64) -> Line {
        let mut w = written(rv, at_ms);
        w.object["metadata"]["name"] = serde_json::json!("other");
        w.object["metadata"]["uid"] = serde_json::json!("u2");
        wrote("o", w)
    }
}
