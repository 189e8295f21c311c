use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::config::Config;
use crate::webhook::{Review, Webhooks};

/// Webhooks that need no API server: the RBAC check is off.
fn webhooks() -> Webhooks {
    let mut config = Config::default();
    config.appwrapper.user_rbac_admission_check = false;
    let client =
        kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
    Webhooks::new(&config, client)
}

fn update_review(old: Value, new: Value) -> Review {
    serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
            "resource": {"group": "workload.codeflare.dev", "version": "v1beta2", "resource": "appwrappers"},
            "name": "aw",
            "namespace": "default",
            "operation": "UPDATE",
            "userInfo": {"username": "alice"},
            "object": new,
            "oldObject": old,
        },
    }))
    .unwrap()
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
