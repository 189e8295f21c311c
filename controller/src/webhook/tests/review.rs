use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::webhook::Review;

fn review(operation: &str, old: Option<Value>, new: Option<Value>) -> Review {
    let mut request = json!({
        "uid": "u-1",
        "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
        "resource": {"group": "workload.codeflare.dev", "version": "v1beta2", "resource": "appwrappers"},
        "name": "aw",
        "namespace": "default",
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:ns:sa", "uid": "8da0-fc"},
    });
    if let Some(new) = new {
        request["object"] = new;
    }
    if let Some(old) = old {
        request["oldObject"] = old;
    }
    serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    }))
    .unwrap()
}

fn update_review(old: Value, new: Value) -> Review {
    review("UPDATE", Some(old), Some(new))
}

fn create_review(aw: &crate::api::AppWrapper) -> Review {
    review("CREATE", None, Some(serde_json::to_value(aw).unwrap()))
}

fn response(review: Review) -> kube::core::admission::AdmissionResponse {
    review.response.expect("a response")
}

/// The JSON Patch of a mutating answer, decoded.
fn patch(review: Review) -> Option<Value> {
    let response = response(review);
    assert!(response.allowed);
    response
        .patch
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
}

fn with_managed_by(managed_by: Option<&str>) -> Value {
    let mut aw = serde_json::to_value(one(pod())).unwrap();
    if let Some(managed_by) = managed_by {
        aw["spec"]["managedBy"] = json!(managed_by);
    }
    aw
}

#[rstest]
#[case::unchanged(None, json!({"uid": "u-1", "allowed": true}))]
#[case::denied(Some("kueue.x-k8s.io/multikueue"), json!({
    "uid": "u-1",
    "allowed": false,
    "status": {
        "code": 403,
        "reason": "Forbidden",
        "message": "spec.managedBy: Forbidden: attempt to change immutable field",
    },
}))]
#[tokio::test]
async fn the_validating_webhook_answers_as_controller_runtime_does(
    #[case] managed_by: Option<&str>,
    #[case] expected: Value,
) {
    let review = update_review(with_managed_by(None), with_managed_by(managed_by));
    let answer = serde_json::to_value(webhooks().validate(review).await).unwrap();
    let mut response = answer["response"].clone();
    if response["status"] == json!({}) {
        response.as_object_mut().unwrap().remove("status");
    }
    assert_eq!(response, expected);
}

/// §6.2: on CREATE the default queue is added (a user's queue wins) and the user labels are
/// written from the request's userInfo, sanitized, over what the user wrote.
#[tokio::test]
async fn the_mutating_webhook_labels_a_new_appwrapper() {
    let mut aw = one(pod());
    aw.metadata.labels = Some(
        [
            ("app".to_string(), "x".to_string()),
            (
                "workload.codeflare.dev/user".to_string(),
                "forged".to_string(),
            ),
        ]
        .into(),
    );
    let found = patch(webhooks_with_queue("default-queue").mutate(create_review(&aw)));
    assert_eq!(
        found,
        Some(json!([{"op": "add", "path": "/metadata/labels", "value": {
            "app": "x",
            "kueue.x-k8s.io/queue-name": "default-queue",
            "workload.codeflare.dev/user": "system_serviceaccount_ns_sa",
            "workload.codeflare.dev/userid": "8da0-fc",
        }}]))
    );
}

/// §6.1: the mutating webhook handles CREATE only; an UPDATE passes untouched.
#[tokio::test]
async fn the_mutating_webhook_leaves_updates_alone() {
    let aw = serde_json::to_value(one(pod())).unwrap();
    let review = review("UPDATE", Some(aw.clone()), Some(aw));
    assert_eq!(
        patch(webhooks_with_queue("default-queue").mutate(review)),
        None
    );
}

/// §6.3 on CREATE: the structural rules deny, with every error in the message.
#[tokio::test]
async fn the_validating_webhook_checks_a_new_appwrapper() {
    let denied = response(
        webhooks()
            .validate(create_review(&appwrapper(vec![])))
            .await,
    );
    assert!(!denied.allowed);
    assert_eq!(
        (denied.result.code, &*denied.result.message),
        (
            403,
            "spec.components: Invalid value: components contains no podspecs"
        )
    );
    let allowed = response(webhooks().validate(create_review(&one(pod()))).await);
    assert!(allowed.allowed, "{:?}", allowed.result);
}

/// A request without the object it is about is answered as controller-runtime's
/// `admission.Errored` does: denied with code 400.
#[rstest]
#[case::create_without_object(review("CREATE", None, None), "the request has no object")]
#[case::update_without_old_object(
    review("UPDATE", None, Some(serde_json::to_value(one(pod())).unwrap())),
    "the request has no old object"
)]
#[tokio::test]
async fn a_request_without_its_object_is_an_error(#[case] review: Review, #[case] message: &str) {
    let answer = response(webhooks().validate(review).await);
    assert!(!answer.allowed);
    assert_eq!(
        (answer.result.code, &*answer.result.message),
        (400, message)
    );
}
