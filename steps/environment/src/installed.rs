//! A controller someone installed (ours or the reference, with the reference's release
//! object names): the run gives it the suite's settings through its ConfigMap, restarts it,
//! and lets its webhooks fail open while the run lasts, as the other child modes do.

use std::time::Duration;

use anyhow::Context as _;
use appwrapper_controller::config::Config;
use clusters::install::controller::manifests::{MUTATING, VALIDATING};
use clusters::install::scale::Workload;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::operator_config::Placement;

/// Failure policies to put back after the run: (configuration kind, name, webhook index,
/// policy).
#[derive(Default)]
pub struct Restore(Vec<(&'static str, String, usize, String)>);

fn webhook_resource(kind: &str) -> ApiResource {
    let plural = if kind == "MutatingWebhookConfiguration" {
        "mutatingwebhookconfigurations"
    } else {
        "validatingwebhookconfigurations"
    };
    ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Writes the suite's settings, makes the webhooks fail open and restarts the controller.
pub async fn configure(
    client: &kube::Client,
    namespace: &str,
    config: &Config,
    workload: &Workload,
) -> anyhow::Result<Restore> {
    crate::under_test::write_config_map(
        client,
        config,
        namespace,
        &Placement::InCluster { namespace },
    )
    .await?;
    let mut restore = Restore::default();
    for (kind, name) in [
        ("MutatingWebhookConfiguration", MUTATING),
        ("ValidatingWebhookConfiguration", VALIDATING),
    ] {
        restore
            .0
            .extend(set_failure_policy(client, kind, name, "Ignore").await?);
    }
    println!(
        "awconf: restarting the installed controller in {namespace} with the suite's settings"
    );
    workload.stop().await?;
    workload.start(Duration::from_secs(180)).await?;
    Ok(restore)
}

/// Sets every webhook's failurePolicy of one configuration; returns what they were.
async fn set_failure_policy(
    client: &kube::Client,
    kind: &'static str,
    name: &str,
    policy: &str,
) -> anyhow::Result<Vec<(&'static str, String, usize, String)>> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &webhook_resource(kind));
    let current = api
        .get(name)
        .await
        .with_context(|| format!("the installed controller's {kind} {name}"))?;
    let webhooks = current.data["webhooks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let (ops, before) = policy_patch(&webhooks, policy);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Json::<()>(serde_json::from_value(Value::Array(ops))?),
    )
    .await
    .with_context(|| format!("setting failurePolicy {policy} on {kind} {name}"))?;
    Ok(before
        .into_iter()
        .map(|(i, p)| (kind, name.to_string(), i, p))
        .collect())
}

/// JSON-patch operations setting each webhook's failurePolicy, and the policies before.
pub fn policy_patch(webhooks: &[Value], policy: &str) -> (Vec<Value>, Vec<(usize, String)>) {
    let mut ops = Vec::new();
    let mut before = Vec::new();
    for (i, webhook) in webhooks.iter().enumerate() {
        let old = webhook["failurePolicy"]
            .as_str()
            .unwrap_or("Fail")
            .to_string();
        ops.push(
            json!({ "op": "add", "path": format!("/webhooks/{i}/failurePolicy"), "value": policy }),
        );
        before.push((i, old));
    }
    (ops, before)
}

impl Restore {
    /// Puts the failure policies back.
    pub async fn apply(self, client: &kube::Client) {
        for (kind, name, index, policy) in self.0 {
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &webhook_resource(kind));
            let op = json!([{ "op": "add", "path": format!("/webhooks/{index}/failurePolicy"), "value": policy }]);
            let patch = match serde_json::from_value(op) {
                Ok(p) => Patch::Json::<()>(p),
                Err(_) => continue,
            };
            if let Err(e) = api.patch(&name, &PatchParams::default(), &patch).await {
                tracing::warn!("restoring failurePolicy {policy} on {kind} {name}: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_webhook_fails_open_and_its_policy_is_remembered() {
        let webhooks = [
            json!({ "name": "m", "failurePolicy": "Fail" }),
            json!({ "name": "n" }),
        ];
        let (ops, before) = policy_patch(&webhooks, "Ignore");
        assert_eq!(
            ops,
            vec![
                json!({ "op": "add", "path": "/webhooks/0/failurePolicy", "value": "Ignore" }),
                json!({ "op": "add", "path": "/webhooks/1/failurePolicy", "value": "Ignore" }),
            ]
        );
        assert_eq!(
            before,
            vec![(0, "Fail".to_string()), (1, "Fail".to_string())]
        );
    }
}
