//! The reference Go operator (github.com/project-codeflare/appwrapper) as the controller under
//! test: built from its pinned module, run out of cluster in its own namespace, configured
//! through its own ConfigMap, and its webhooks reached as in a cluster: through the Service its
//! certificate names, whose EndpointSlice points at this machine.
//!
//! Out of cluster nobody mounts the operator's certificate Secret into its certificate
//! directory; [`mount_certificates`] does what the kubelet's secret volume would.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use appwrapper_controller::config::Config;
use appwrapper_controller::webhook::webhook_configurations;
use clusters::toolchain::{self, Component};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ServiceReference, ValidatingWebhookConfiguration,
    WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

use crate::operator_config::{Placement, operator_config};
use objects::yaml;

/// The operator's namespace (its `NAMESPACE`); its ConfigMap, Secret and Service live there.
pub const NAMESPACE: &str = "awconf-reference";
/// The name the operator reads its configuration from (its `--config` default).
pub const CONFIG_MAP: &str = "appwrapper-operator-config";
/// The webhook server's port: fixed in the operator's `main.go`.
pub const WEBHOOK_PORT: u16 = 9443;
/// Where its webhook server reads its certificate: controller-runtime's default, which the
/// operator does not change (its `certManagement.certificateDir` must name the same place).
pub const CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
const SERVICE: &str = "appwrapper-webhook-service";
const SECRET: &str = "appwrapper-webhook-server-cert";
const BINARY: &str = "appwrapper-operator";

/// Builds the operator at `version` into the cache (once; later runs reuse it) and returns
/// the binary. Blocking: a cold `go build` takes minutes.
pub fn build(version: &str) -> anyhow::Result<PathBuf> {
    let cache = toolchain::cache_dir();
    let component = Component::appwrapper(version);
    toolchain::ensure(&component, &cache)
        .with_context(|| format!("building the reference operator {version}"))?;
    Ok(component.binary(&cache, BINARY))
}

/// Where a built operator lives, without building it.
pub fn binary(version: &str) -> PathBuf {
    Component::appwrapper(version).binary(&toolchain::cache_dir(), BINARY)
}

/// Where the operator's webhook server listens, on port 9443.
#[derive(Clone, Copy, Debug)]
pub enum Listens {
    /// On this machine's address: one operator per machine.
    Here,
    /// In a network namespace of this machine, at its end of the link.
    InNamespace(std::net::Ipv4Addr),
}

/// The namespace, the ConfigMap, the empty certificate Secret, the webhook Service with its
/// EndpointSlice (where the operator `listens`, port 9443) and both webhook configurations
/// pointing at the Service. The operator injects their caBundle itself. With `fail_open` an unreachable webhook lets requests through (the
/// operator is down while a restart scenario has killed it).
pub async fn install(
    client: &kube::Client,
    config: &Config,
    cert_dir: &Path,
    fail_open: bool,
    listens: Listens,
) -> anyhow::Result<()> {
    let host = match listens {
        Listens::Here => here()?,
        Listens::InNamespace(address) => address,
    };
    std::fs::create_dir_all(cert_dir)
        .with_context(|| format!("creating {}", cert_dir.display()))?;
    let config_yaml = yaml::render(&operator_config(
        config,
        &Placement::Beside {
            cert_dir,
            namespace: NAMESPACE,
        },
    )?);
    let objects = [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
            "data": {"config.yaml": config_yaml}}),
        // Empty, as the operator's release manifests ship it: its certificate rotator fills it.
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": NAMESPACE}}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": NAMESPACE},
            "spec": {"ports": [{"port": 443, "targetPort": WEBHOOK_PORT, "protocol": "TCP"}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": SERVICE, "namespace": NAMESPACE, "labels": {
                "kubernetes.io/service-name": SERVICE,
                "endpointslice.kubernetes.io/managed-by": "awconf"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [host.to_string()], "conditions": {"ready": true}}],
            "ports": [{"name": "", "port": WEBHOOK_PORT, "protocol": "TCP"}]}),
    ];
    for object in &objects {
        apply(client, object).await?;
    }
    let (mutating, validating) = service_webhooks();
    crate::webhook::apply_configurations(client, mutating, validating, fail_open)
        .await
        .context("registering the reference operator's webhooks")
}

/// This machine's address, once port 9443 is free here.
fn here() -> anyhow::Result<std::net::Ipv4Addr> {
    if let Ok(listener) = std::net::TcpListener::bind(("0.0.0.0", WEBHOOK_PORT)) {
        drop(listener);
    } else {
        let holder = clusters::ports::holder(WEBHOOK_PORT)
            .unwrap_or_else(|| "a process that could not be found".into());
        anyhow::bail!(
            "port {WEBHOOK_PORT} is held by {holder}; the reference operator serves its \
             webhooks there, a port it does not let anyone change, so only one \
             `--controller reference` run fits on a machine: stop that one, or wait for it"
        );
    }
    clusters::host::address().context("the reference operator's webhook endpoint")
}

async fn apply(client: &kube::Client, object: &Value) -> anyhow::Result<()> {
    let obj: DynamicObject = serde_json::from_value(object.clone())?;
    let kind = object["kind"].as_str().unwrap_or_default();
    let (group, version) = match object["apiVersion"].as_str().unwrap_or_default() {
        v if v.contains('/') => v.split_once('/').unwrap_or_default(),
        v => ("", v),
    };
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let api: Api<DynamicObject> = match &obj.metadata.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &obj.metadata.name.clone().unwrap_or_default(),
        &PatchParams::apply("awconf").force(),
        &Patch::Apply(&obj),
    )
    .await
    .with_context(|| format!("creating the reference operator's {kind}"))?;
    Ok(())
}

/// The operator's two webhook configurations (names, webhooks, rules and paths as in its
/// `config/webhook/manifests.yaml`), reaching it through its Service.
pub fn service_webhooks() -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let (mut mutating, mut validating) = webhook_configurations("https://unused", "");
    let through_service = |config: &mut WebhookClientConfig| {
        let path = config
            .url
            .take()
            .and_then(|url| url.strip_prefix("https://unused").map(str::to_owned));
        config.ca_bundle = None;
        config.service = Some(ServiceReference {
            name: SERVICE.to_owned(),
            namespace: NAMESPACE.to_owned(),
            path,
            port: Some(443),
        });
    };
    for webhook in mutating.webhooks.iter_mut().flatten() {
        through_service(&mut webhook.client_config);
    }
    for webhook in validating.webhooks.iter_mut().flatten() {
        through_service(&mut webhook.client_config);
    }
    (mutating, validating)
}

/// Copies `tls.crt` and `tls.key` of the operator's certificate Secret into `cert_dir`
/// whenever they change, as a secret volume would; runs until aborted.
pub fn mount_certificates(client: kube::Client, cert_dir: PathBuf) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let secrets: Api<Secret> = Api::namespaced(client, NAMESPACE);
        let mut mounted: Option<(Vec<u8>, Vec<u8>)> = None;
        loop {
            if let Ok(Some(secret)) = secrets.get_opt(SECRET).await {
                let data = secret.data.unwrap_or_default();
                let file = |key: &str| data.get(key).map(|b| b.0.clone());
                if let (Some(cert), Some(key)) = (file("tls.crt"), file("tls.key")) {
                    let pair = (cert, key);
                    if mounted.as_ref() != Some(&pair) {
                        match write_pair(&cert_dir, &pair) {
                            Ok(()) => mounted = Some(pair),
                            Err(e) => tracing::warn!("mounting the operator's certificate: {e:#}"),
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

/// Each file is written aside and renamed into place, so the operator never reads half of one.
fn write_pair(dir: &Path, (cert, key): &(Vec<u8>, Vec<u8>)) -> anyhow::Result<()> {
    for (name, bytes) in [("tls.key", key), ("tls.crt", cert)] {
        let aside = dir.join(format!(".{name}.tmp"));
        std::fs::write(&aside, bytes).with_context(|| format!("writing {}", aside.display()))?;
        std::fs::rename(&aside, dir.join(name))
            .with_context(|| format!("placing {name} in {}", dir.display()))?;
    }
    Ok(())
}

/// The operator's environment: its namespace and the cluster.
pub fn environment(kubeconfig: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("NAMESPACE", NAMESPACE.to_string()),
        ("KUBECONFIG", kubeconfig.display().to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_nanoseconds_and_the_certificates_go_to_the_given_directory() {
        let config = crate::under_test::suite_config();
        let rendered = operator_config(
            &config,
            &Placement::Beside {
                cert_dir: Path::new("/tmp/certs"),
                namespace: NAMESPACE,
            },
        )
        .unwrap();
        let ft = &rendered["appwrapper"]["faultTolerance"];
        assert_eq!(ft["admissionGracePeriod"], json!(20_000_000_000i64));
        assert_eq!(ft["resetPause"], json!(2_000_000_000i64));
        assert_eq!(ft["retryLimit"], json!(3));
        assert_eq!(ft["gracePeriodCeiling"], json!(30_000_000_000i64));
        assert_eq!(
            rendered["certManagement"],
            json!({"namespace": NAMESPACE, "certificateDir": "/tmp/certs"})
        );
        assert_eq!(rendered["webhooksEnabled"], json!(true));
        let yaml_text = yaml::render(&rendered);
        assert!(yaml_text.contains("warmupGracePeriod: 30000000000"));
    }

    #[test]
    fn the_webhooks_reach_the_operator_through_its_service() {
        let (mutating, validating) = service_webhooks();
        assert_eq!(
            mutating.metadata.name.as_deref(),
            Some("appwrapper-mutating-webhook-configuration")
        );
        let hook = &validating.webhooks.as_ref().unwrap()[0];
        let service = hook.client_config.service.as_ref().unwrap();
        assert_eq!(service.name, SERVICE);
        assert_eq!(service.namespace, NAMESPACE);
        assert_eq!(
            service.path.as_deref(),
            Some("/validate-workload-codeflare-dev-v1beta2-appwrapper")
        );
        assert!(hook.client_config.url.is_none() && hook.client_config.ca_bundle.is_none());
        assert_eq!(hook.failure_policy.as_deref(), Some("Fail"));
    }

    #[test]
    fn a_mounted_pair_replaces_the_previous_files() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path(), &(b"cert-1".to_vec(), b"key-1".to_vec())).unwrap();
        write_pair(dir.path(), &(b"cert-2".to_vec(), b"key-2".to_vec())).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("tls.crt")).unwrap(),
            b"cert-2"
        );
        assert_eq!(std::fs::read(dir.path().join("tls.key")).unwrap(), b"key-2");
    }
}
