//! The controller's admission webhooks on the embedded cluster, beside Kueue's: a serving
//! certificate from the cluster CA, the server (in this process for the embedded controller, in
//! the child for the process mode), and the two configurations registered by URL with the CA as
//! their caBundle.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use appwrapper_controller::api::USER_LABEL;
use appwrapper_controller::config::Config;
use appwrapper_controller::webhook::{
    ServerOptions, WebhookServer, Webhooks, serve, webhook_configurations,
};
use clusters::LocalCluster;
use clusters::pki::Ca;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::wait::{self, Check};

/// Where the webhooks are served from and with which certificate.
#[derive(Clone, Debug)]
pub struct WebhookEndpoint {
    /// Holds `tls.crt` and `tls.key`, signed by the cluster CA for loopback.
    pub cert_dir: PathBuf,
    pub port: u16,
    ca_pem: String,
}

impl WebhookEndpoint {
    /// Writes a serving certificate from the cluster CA and picks a free loopback port.
    pub fn prepare(cluster: &LocalCluster, report_dir: &std::path::Path) -> anyhow::Result<Self> {
        let ca =
            Ca::load(&cluster.work_dir().join("pki"), "ca").context("loading the cluster CA")?;
        let cert_dir = report_dir.join("webhook-certs");
        std::fs::create_dir_all(&cert_dir)
            .with_context(|| format!("creating {}", cert_dir.display()))?;
        ca.serving("appwrapper-webhook", &[], &[])?
            .write(&cert_dir, "tls")?;
        let port = clusters::ports::free_ports(1)?
            .first()
            .copied()
            .context("no free port for the webhook")?;
        Ok(WebhookEndpoint {
            cert_dir,
            port,
            ca_pem: ca.pair.cert_pem,
        })
    }

    /// The same certificate at another free port, for a second server beside this one.
    pub fn elsewhere(&self) -> anyhow::Result<Self> {
        let port = clusters::ports::free_ports(1)?
            .first()
            .copied()
            .context("no free port for the webhook")?;
        Ok(WebhookEndpoint {
            port,
            ..self.clone()
        })
    }

    #[cfg(test)]
    pub fn for_test(cert_dir: &std::path::Path, port: u16) -> Self {
        WebhookEndpoint {
            cert_dir: cert_dir.to_path_buf(),
            port,
            ca_pem: String::new(),
        }
    }

    /// `127.0.0.1:<port>`, the controller binary's `--webhook-bind-address`.
    pub fn bind_address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Serves the webhooks in this process (for the embedded controller); they keep running
    /// when the controller is stopped or killed, like a separate webhook deployment.
    pub async fn serve(
        &self,
        config: &Config,
        client: kube::Client,
    ) -> anyhow::Result<WebhookServer> {
        let bind = self.bind_address().parse()?;
        let options = ServerOptions::in_dir(&self.cert_dir, bind);
        Ok(serve(options, Webhooks::new(config, client)).await?)
    }

    /// Registers both webhooks by URL and waits until the API server calls them, or until
    /// `exited` reports that the controller serving them is gone. With `fail_open` an
    /// unreachable webhook lets requests through (failurePolicy Ignore) instead of refusing
    /// them.
    pub async fn register(
        &self,
        client: &kube::Client,
        fail_open: bool,
        exited: impl FnMut() -> Option<String>,
    ) -> anyhow::Result<()> {
        let url = format!("https://{}", self.bind_address());
        let (mutating, validating) = webhook_configurations(&url, &self.ca_pem);
        apply_configurations(client, mutating, validating, fail_open).await?;
        wait_until_effective(client, exited).await
    }
}

/// Server-side applies both webhook configurations; with `fail_open` their webhooks let
/// requests through when they cannot be reached (failurePolicy Ignore).
pub async fn apply_configurations(
    client: &kube::Client,
    mut mutating: MutatingWebhookConfiguration,
    mut validating: ValidatingWebhookConfiguration,
    fail_open: bool,
) -> anyhow::Result<()> {
    let policy = Some(if fail_open { "Ignore" } else { "Fail" }.to_owned());
    for webhook in mutating.webhooks.iter_mut().flatten() {
        webhook.failure_policy = policy.clone();
    }
    for webhook in validating.webhooks.iter_mut().flatten() {
        webhook.failure_policy = policy.clone();
    }
    let apply = PatchParams::apply("awconf").force();
    let name = |meta: &kube::api::ObjectMeta| meta.name.clone().unwrap_or_default();
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(&name(&mutating.metadata), &apply, &Patch::Apply(&mutating))
        .await
        .context("registering the mutating webhook")?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(
            &name(&validating.metadata),
            &apply,
            &Patch::Apply(&validating),
        )
        .await
        .context("registering the validating webhook")?;
    Ok(())
}

fn probe(name: &str, template: Value) -> anyhow::Result<DynamicObject> {
    let aw = crate::fixtures::appwrapper(name, vec![json!({"template": template})]);
    Ok(serde_json::from_value(aw)?)
}

/// Registration takes effect asynchronously (and the child controller may still be starting):
/// dry-run creations until an AppWrapper gets its user label and a nested one is refused. A
/// controller that exits meanwhile (`exited` says how) ends the wait at once: no time-out
/// hides why.
pub async fn wait_until_effective(
    client: &kube::Client,
    mut exited: impl FnMut() -> Option<String>,
) -> anyhow::Result<()> {
    wait::eventually(
        Duration::from_secs(60),
        "the webhooks to take effect",
        move || {
            let gone = exited();
            async move {
                if let Some(why) = gone {
                    return Ok(Check::Never(why));
                }
                Ok(match effective(client).await? {
                    Ok(()) => Check::Done(()),
                    Err(why) => Check::NotYet(why),
                })
            }
        },
    )
    .await
}

/// One probe of [`wait_until_effective`]: `Err` says what is not in effect yet.
pub async fn effective(client: &kube::Client) -> anyhow::Result<Result<(), String>> {
    let api = objects::appwrappers(client, "default");
    let valid = probe(
        "webhook-probe",
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )?;
    let nested = probe(
        "webhook-probe",
        json!({"apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper", "metadata": {"name": "inner"}, "spec": {"components": []}}),
    )?;
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let labelled = match api.create(&dry_run, &valid).await {
        Ok(aw) => aw
            .metadata
            .labels
            .is_some_and(|l| l.contains_key(USER_LABEL)),
        Err(e) => return Ok(Err(format!("a valid AppWrapper was refused: {e}"))),
    };
    let refused = match api.create(&dry_run, &nested).await {
        Err(kube::Error::Api(status)) => status.message.contains("Nested AppWrappers"),
        _ => false,
    };
    Ok(if labelled && refused {
        Ok(())
    } else {
        Err(format!("labelled: {labelled}, nested refused: {refused}"))
    })
}
