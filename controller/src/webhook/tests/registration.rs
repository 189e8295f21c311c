//! The two webhook configurations registered by URL (§6.1).

use serde_json::{Value, json};

use crate::webhook::webhook_configurations;

fn webhook(name: &str, path: &str, operations: &[&str]) -> Value {
    json!({
        "name": name,
        "clientConfig": {
            "url": format!("https://127.0.0.1:9443{path}"),
            "caBundle": "Q0E=",
        },
        "rules": [{
            "apiGroups": ["workload.codeflare.dev"],
            "apiVersions": ["v1beta2"],
            "resources": ["appwrappers"],
            "operations": operations,
        }],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchExpressions": [{
            "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"],
        }]},
    })
}

/// The table of §6.1: names, paths, operations, rules, failure policy, side effects and review
/// versions, under the configuration objects' installed names; kube-system is left out.
#[test]
fn the_configurations_follow_the_registration_table() {
    let (mutating, validating) = webhook_configurations("https://127.0.0.1:9443/", "CA");
    assert_eq!(
        serde_json::to_value(&mutating).unwrap(),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "appwrapper-mutating-webhook-configuration"},
            "webhooks": [webhook(
                "mappwrapper.kb.io",
                "/mutate-workload-codeflare-dev-v1beta2-appwrapper",
                &["CREATE"],
            )],
        })
    );
    assert_eq!(
        serde_json::to_value(&validating).unwrap(),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "appwrapper-validating-webhook-configuration"},
            "webhooks": [webhook(
                "vappwrapper.kb.io",
                "/validate-workload-codeflare-dev-v1beta2-appwrapper",
                &["CREATE", "UPDATE"],
            )],
        })
    );
}
