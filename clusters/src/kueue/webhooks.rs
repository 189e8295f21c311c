//! Kueue's webhook configurations, rewritten to call the manager on loopback by URL.

use base64::Engine;
use serde_json::{Value, json};

use super::KueueError;

/// The webhooks the suite needs. Pod, Deployment and StatefulSet webhooks are left out: with
/// `failurePolicy: Fail` they would make every pod creation depend on Kueue being up.
pub const NEEDED: &[&str] = &[
    "mappwrapper.kb.io",
    "vappwrapper.kb.io",
    "mjob.kb.io",
    "vjob.kb.io",
    "mworkload.kb.io",
    "vworkload.kb.io",
    "mresourceflavor.kb.io",
    "vresourceflavor.kb.io",
    "mclusterqueue.kb.io",
    "vclusterqueue.kb.io",
    "vcohort.kb.io",
];

/// Webhooks on user workloads; kustomize adds this namespace selector to them upstream.
const JOB_FRAMEWORK: &[&str] = &[
    "mappwrapper.kb.io",
    "vappwrapper.kb.io",
    "mjob.kb.io",
    "vjob.kb.io",
];

/// Takes the documents of `config/components/webhook/manifests.yaml` and returns the
/// configurations to create, named `awconf-kueue-*`.
pub fn rewrite(documents: Vec<Value>, port: u16, ca_pem: &str) -> Result<Vec<Value>, KueueError> {
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let mut out = Vec::new();
    for mut doc in documents {
        let kind = doc["kind"].as_str().unwrap_or_default().to_string();
        let prefix = match kind.as_str() {
            "MutatingWebhookConfiguration" => "awconf-kueue-mutating",
            "ValidatingWebhookConfiguration" => "awconf-kueue-validating",
            _ => continue,
        };
        let hooks = doc["webhooks"]
            .as_array()
            .cloned()
            .ok_or_else(|| KueueError::NoWebhooks { kind: kind.clone() })?;
        let mut kept = Vec::new();
        for mut hook in hooks {
            let name = hook["name"].as_str().unwrap_or_default().to_string();
            if !NEEDED.contains(&name.as_str()) {
                continue;
            }
            let path = hook["clientConfig"]["service"]["path"]
                .as_str()
                .ok_or_else(|| KueueError::NoServicePath { name: name.clone() })?
                .to_string();
            hook["clientConfig"] =
                json!({ "url": format!("https://127.0.0.1:{port}{path}"), "caBundle": ca_bundle });
            if JOB_FRAMEWORK.contains(&name.as_str()) {
                hook["namespaceSelector"] = json!({ "matchExpressions": [{
                    "key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "kueue-system"],
                }] });
            }
            kept.push(hook);
        }
        doc["metadata"] = json!({ "name": prefix });
        doc["webhooks"] = Value::Array(kept);
        out.push(doc);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(name: &str, path: &str) -> Value {
        json!({"name": name, "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
               "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"], "rules": []})
    }

    #[test]
    fn keeps_needed_hooks_by_url_and_drops_pod_hooks() {
        let docs = vec![json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [hook("mappwrapper.kb.io", "/mutate-aw"), hook("mpod.kb.io", "/mutate--v1-pod"),
                         hook("mworkload.kb.io", "/mutate-wl")],
        })];
        let out = rewrite(docs, 9443, "PEM").unwrap();
        let hooks = out[0]["webhooks"].as_array().unwrap();
        let names: Vec<_> = hooks.iter().map(|h| h["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["mappwrapper.kb.io", "mworkload.kb.io"]);
        assert_eq!(
            hooks[0]["clientConfig"]["url"],
            "https://127.0.0.1:9443/mutate-aw"
        );
        assert!(hooks[0]["clientConfig"].get("service").is_none());
        assert_eq!(hooks[0]["clientConfig"]["caBundle"], "UEVN");
        assert_eq!(hooks[0]["failurePolicy"], "Fail");
        assert!(hooks[0]["namespaceSelector"].is_object());
        assert!(hooks[1].get("namespaceSelector").is_none());
        assert_eq!(out[0]["metadata"]["name"], "awconf-kueue-mutating");
    }
}
