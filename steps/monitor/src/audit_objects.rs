//! When each pod and each other namespaced object was created and removed, from the API
//! server's audit log (the local cluster's policy logs creates and deletions of every resource
//! but credentials at RequestResponse, and writes to pods, which lose their last finalizer in
//! an update). Pure over the log's lines: [`parse`] reads one, an [`ObjectLog`] keeps what
//! they say, and [`ObjectLog::judge`] tells what of a workload existed when a release was
//! written, whether or not the API server answers afterwards.
//!
//! Times are the API server's: a write took effect between its receipt and its completion
//! ([`Span`]), so one write precedes another for certain when it completed before the other
//! was received; writes that overlap leave the order open, and the verdict says so.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::audit_log::{Span, span_of, time};
use crate::leftovers::{Leftover, Release, belongs};
use appwrapper_controller::api::APPWRAPPER_LABEL;

const VERBS: [&str; 5] = ["create", "update", "patch", "delete", "deletecollection"];

/// What one line of the log says about objects other than AppWrappers.
#[derive(Clone, Debug, PartialEq)]
pub enum Line {
    /// A write was received in this namespace.
    Received {
        id: String,
        namespace: String,
        at: DateTime<Utc>,
    },
    /// An object was created (its identity, owners and labels, not its whole state).
    Created {
        id: String,
        object: Value,
        span: Span,
    },
    /// The object with this uid was removed.
    Removed {
        id: String,
        uid: String,
        span: Span,
    },
    /// A write completed and removed nothing.
    Done {
        id: String,
    },
    /// A write completed with an outcome the log does not show: a server error (it may or may
    /// not have been committed), or a deletecollection, whose answer lists what it found
    /// rather than what it removed.
    Unknown {
        id: String,
    },
    /// A namespace was created with its object logged: the policy logs objects.
    Covered,
    Other,
}

/// Reads one line of the log (JSON, one audit event).
pub fn parse(line: &str) -> Line {
    // Only RequestResponse rules log objects, and AppWrappers are read by `audit_log`.
    if !line.contains("\"level\":\"RequestResponse\"") || line.contains("\"appwrappers\"") {
        return Line::Other;
    }
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return Line::Other;
    };
    let verb = event["verb"].as_str().unwrap_or_default();
    if !VERBS.contains(&verb) {
        return Line::Other;
    }
    let object_ref = &event["objectRef"];
    let id = event["auditID"].as_str().unwrap_or_default().to_string();
    let namespace = object_ref["namespace"].as_str().unwrap_or_default();
    match event["stage"].as_str() {
        Some("RequestReceived") if !namespace.is_empty() => match time(&event["stageTimestamp"]) {
            Some(at) => Line::Received {
                id,
                namespace: namespace.to_string(),
                at,
            },
            None => Line::Other,
        },
        Some("ResponseComplete") => completed(id, verb, object_ref, &event),
        _ => Line::Other,
    }
}

fn completed(id: String, verb: &str, object_ref: &Value, event: &Value) -> Line {
    let code = event["responseStatus"]["code"].as_u64().unwrap_or(0);
    let response = &event["responseObject"];
    let span = span_of(event);
    if (400..500).contains(&code) {
        return Line::Done { id };
    }
    let Some(span) = span.filter(|_| (200..300).contains(&code)) else {
        return Line::Unknown { id };
    };
    if object_ref["resource"] == "namespaces" && object_ref["subresource"].is_null() {
        return if verb == "create" {
            Line::Covered
        } else {
            Line::Other
        };
    }
    let meta = &response["metadata"];
    match verb {
        "create" => match meta["uid"].as_str() {
            Some(_) if meta["namespace"].as_str().is_some_and(|n| !n.is_empty()) => Line::Created {
                id,
                object: identity(response),
                span,
            },
            _ => Line::Done { id },
        },
        "deletecollection" => Line::Unknown { id },
        // A deletion done at once is answered with a Status naming the uid (most resources)
        // or with the object as it was (pods).
        "delete" if response["kind"] == "Status" => match response["details"]["uid"].as_str() {
            Some(uid) => Line::Removed {
                id,
                uid: uid.to_string(),
                span,
            },
            None => Line::Unknown { id },
        },
        "delete" | "update" | "patch" if removes(verb, meta) => match meta["uid"].as_str() {
            Some(uid) => Line::Removed {
                id,
                uid: uid.to_string(),
                span,
            },
            None => Line::Unknown { id },
        },
        _ => Line::Done { id },
    }
}

/// Whether a write that answered with this metadata removed its object: no finalizer is left
/// and no grace period runs (a pod deleted with one stays until it ends), and an update
/// removes only what was already being deleted.
fn removes(verb: &str, meta: &Value) -> bool {
    let finalizers = meta["finalizers"].as_array().is_some_and(|f| !f.is_empty());
    let grace = meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
    let deleting = !meta["deletionTimestamp"].is_null();
    !finalizers && grace == 0 && (verb == "delete" || deleting)
}

/// What of a created object the judgement needs.
fn identity(object: &Value) -> Value {
    let meta = &object["metadata"];
    json!({
        "apiVersion": object["apiVersion"],
        "kind": object["kind"],
        "metadata": {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
            "creationTimestamp": meta["creationTimestamp"],
            "ownerReferences": meta["ownerReferences"],
            "labels": {APPWRAPPER_LABEL: meta["labels"][APPWRAPPER_LABEL]},
        },
    })
}

/// An object's life, as the log shows it.
#[derive(Clone, Debug)]
struct Life {
    object: Value,
    created: Span,
    removed: Option<Span>,
}

/// Every object's life, and the writes whose outcome the log does not show.
#[derive(Default)]
pub struct ObjectLog {
    covered: bool,
    lives: HashMap<String, Life>,
    /// Writes whose outcome the log does not show (yet, or ever: the API server may have
    /// died with them), by audit ID: namespace and receipt.
    open: HashMap<String, (String, DateTime<Utc>)>,
}

/// What of a workload existed when its release was written.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Nothing.
    Clean,
    /// These, each with whether the log shows its removal after the release.
    Existed(Vec<(Leftover, bool)>),
    /// The log cannot tell, and why.
    Unsure(String),
}

impl ObjectLog {
    pub fn push(&mut self, line: Line) {
        match line {
            Line::Received { id, namespace, at } => {
                self.open.insert(id, (namespace, at));
            }
            Line::Created { id, object, span } => {
                self.open.remove(&id);
                let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
                self.lives.insert(
                    uid.to_string(),
                    Life {
                        object,
                        created: span,
                        removed: None,
                    },
                );
            }
            Line::Removed { id, uid, span } => {
                self.open.remove(&id);
                if let Some(life) = self.lives.get_mut(&uid) {
                    life.removed.get_or_insert(span);
                }
            }
            Line::Done { id } => {
                self.open.remove(&id);
            }
            Line::Unknown { .. } => {}
            Line::Covered => self.covered = true,
            Line::Other => {}
        }
    }

    /// What of the workload of `release`, written in `at`, existed then: its labelled pods and
    /// the objects under its components' names that are its own ([`belongs`]).
    pub fn judge(&self, release: &Release, at: &Span) -> Verdict {
        if !self.covered {
            return Verdict::Unsure("the audit log does not hold the creation of objects".into());
        }
        let state = &release.state;
        let ns = state.namespace.as_str();
        let unseen = self
            .open
            .values()
            .any(|(n, received)| n == ns && *received <= at.completed);
        if unseen {
            return Verdict::Unsure(format!(
                "a write in namespace {ns} made before the release has no outcome in the log"
            ));
        }
        let mut existed = Vec::new();
        for life in self.lives.values() {
            let object = &life.object;
            let meta = &object["metadata"];
            if meta["namespace"] != ns || !self.of_workload(release, object) {
                continue;
            }
            let name = meta["name"].as_str().unwrap_or_default();
            let kind = object["kind"].as_str().unwrap_or_default();
            if life.created.after(at) || life.removed.is_some_and(|r| r.before(at)) {
                continue;
            }
            let removed_after = match life.removed {
                Some(r) if r.after(at) => true,
                None => false,
                Some(_) => {
                    return Verdict::Unsure(format!(
                        "{kind} {name} was removed while the release was written"
                    ));
                }
            };
            if !life.created.before(at) {
                return Verdict::Unsure(format!(
                    "{kind} {name} was created while the release was written"
                ));
            }
            existed.push((
                Leftover::of(kind, object, &state.uid, Vec::new()),
                removed_after,
            ));
        }
        if existed.is_empty() {
            Verdict::Clean
        } else {
            existed.sort_by(|a, b| (&a.0.kind, &a.0.name).cmp(&(&b.0.kind, &b.0.name)));
            Verdict::Existed(existed)
        }
    }

    fn of_workload(&self, release: &Release, object: &Value) -> bool {
        let state = &release.state;
        let labelled = object["kind"] == "Pod"
            && object["metadata"]["labels"][APPWRAPPER_LABEL] == state.name.as_str();
        labelled
            || release.components.iter().any(|(c, deployed)| {
                object["apiVersion"] == c.api_version.as_str()
                    && object["kind"] == c.kind.as_str()
                    && object["metadata"]["name"] == c.name.as_str()
                    && belongs(object, state, deployed)
            })
    }
}

#[cfg(test)]
mod tests;
