//! Registering our webhooks with the API server by URL, for clusters where the controller runs
//! outside (the embedded cluster, the harness).

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::ObjectMeta;

use super::server::{MUTATE_PATH, VALIDATE_PATH};
use crate::api::{GROUP, VERSION};
use crate::config::CertManagementConfig;

pub const MUTATING_WEBHOOK: &str = "mappwrapper.kb.io";
pub const VALIDATING_WEBHOOK: &str = "vappwrapper.kb.io";

/// The reference's two webhook configurations, calling `base_url` (e.g.
/// `https://127.0.0.1:9443`) and trusting `ca_pem`; AppWrappers in kube-system are not sent.
pub fn webhook_configurations(
    base_url: &str,
    ca_pem: &str,
) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let names = CertManagementConfig::default();
    let base = base_url.trim_end_matches('/');
    let client = |path: &str| WebhookClientConfig {
        url: Some(format!("{base}{path}")),
        ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
        service: None,
    };
    let rule = |operations: &[&str]| RuleWithOperations {
        api_groups: Some(vec![GROUP.to_owned()]),
        api_versions: Some(vec![VERSION.to_owned()]),
        resources: Some(vec!["appwrappers".to_owned()]),
        operations: Some(operations.iter().map(|o| o.to_string()).collect()),
        scope: None,
    };
    let mutating = MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(names.mutating_webhook_config_name),
            ..Default::default()
        },
        webhooks: Some(vec![MutatingWebhook {
            name: MUTATING_WEBHOOK.to_owned(),
            client_config: client(MUTATE_PATH),
            rules: Some(vec![rule(&["CREATE"])]),
            failure_policy: Some("Fail".to_owned()),
            side_effects: "None".to_owned(),
            admission_review_versions: vec!["v1".to_owned()],
            namespace_selector: Some(not_kube_system()),
            ..Default::default()
        }]),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(names.validating_webhook_config_name),
            ..Default::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: VALIDATING_WEBHOOK.to_owned(),
            client_config: client(VALIDATE_PATH),
            rules: Some(vec![rule(&["CREATE", "UPDATE"])]),
            failure_policy: Some("Fail".to_owned()),
            side_effects: "None".to_owned(),
            admission_review_versions: vec!["v1".to_owned()],
            namespace_selector: Some(not_kube_system()),
            ..Default::default()
        }]),
    };
    (mutating, validating)
}

fn not_kube_system() -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "kubernetes.io/metadata.name".to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(vec!["kube-system".to_owned()]),
        }]),
        match_labels: None,
    }
}
