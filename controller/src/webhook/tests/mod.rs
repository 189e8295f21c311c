//! Table tests of the pure webhook rules.

mod create;
mod field;
mod hostile;
mod rbac;
mod registration;
mod review;
mod server;
mod update;

use serde_json::{Value, json};

use crate::api::AppWrapper;
use crate::webhook::Webhooks;

/// Webhooks that need no API server (the RBAC check is off), with `queue` as the default
/// queue name (none when empty).
pub fn webhooks_with_queue(queue: &str) -> Webhooks {
    Webhooks::without_access_review(queue)
}

pub fn webhooks() -> Webhooks {
    webhooks_with_queue("")
}

/// An AdmissionReview of an AppWrapper as the API server sends it, by user `alice`.
pub fn review_json(operation: &str, old: Option<&Value>, new: &Value) -> Value {
    let mut review = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
            "resource": {"group": "workload.codeflare.dev", "version": "v1beta2", "resource": "appwrappers"},
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice", "uid": "42"},
            "object": new,
        },
    });
    if let Some(old) = old {
        review["request"]["oldObject"] = old.clone();
    }
    review
}

pub fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox"}]})
}

pub fn pod_template() -> Value {
    json!({"metadata": {"labels": {"app": "x"}}, "spec": pod_spec()})
}

pub fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec()})
}

pub fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": replicas, "template": pod_template()}})
}

pub fn jobset() -> Value {
    json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
    "spec": {"replicatedJobs": [
        {"name": "a", "replicas": 1, "template": {"spec": {"parallelism": 1, "template": pod_template()}}},
        {"name": "b", "replicas": 1, "template": {"spec": {"parallelism": 1, "template": pod_template()}}}
    ]}})
}

/// An AppWrapper in `default` with one component per `(template, declared podSets)`.
pub fn appwrapper(components: Vec<(Value, Value)>) -> AppWrapper {
    let components: Vec<Value> = components
        .into_iter()
        .map(|(template, pod_sets)| json!({"template": template, "podSets": pod_sets}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": "aw", "namespace": "default"},
        "spec": {"components": components},
    }))
    .unwrap()
}

pub fn one(template: Value) -> AppWrapper {
    appwrapper(vec![(template, json!([]))])
}
