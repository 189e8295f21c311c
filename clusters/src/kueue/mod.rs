//! The real Kueue manager, built from its Go module and run as a local process beside the
//! embedded cluster, with its webhooks registered by URL.

pub mod config;
mod error;
pub mod objects;
mod source;
mod version;
mod webhooks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

pub use error::KueueError;
pub use source::{KueueSource, Materialized, default_source, default_version};
pub use version::KueueVersion;

use crate::cluster::{ClusterError, client_from_kubeconfig};
use crate::pki::Ca;
use crate::poll::{self, Look};
use crate::process::Process;

/// Kueue hard-codes where it reads its metrics certificate when internal cert management is off.
pub const METRICS_CERT_DIR: &str = "/etc/kueue/metrics/certs";

/// Where Kueue runs: the cluster's files (kubeconfig, CA) and the binary cache.
#[derive(Clone, Debug)]
pub struct KueueHost {
    pub work_dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
    /// Leave the manager running after this process exits (`cluster up --detach`).
    pub detached: bool,
}

pub struct Kueue {
    host: KueueHost,
    source: KueueSource,
    webhook_port: u16,
    health_port: u16,
    process: Option<Process>,
}

impl Kueue {
    /// Builds Kueue if needed, installs its CRDs and the AppWrapper CRD, starts the manager,
    /// registers its webhooks and waits until they answer.
    pub async fn start(host: KueueHost, source: &KueueSource) -> Result<Self, ClusterError> {
        let ports = crate::ports::free_ports(2).map_err(ClusterError::NoFreePorts)?;
        let mut kueue = Self {
            host,
            source: source.clone(),
            webhook_port: ports[0],
            health_port: ports[1],
            process: None,
        };
        let client = kueue.client().await?;
        let aw_crd = appwrapper_controller::crd::appwrapper_crd();
        crate::crds::install(&client, std::slice::from_ref(&aw_crd)).await?;
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("kueue-system".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        match Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        kueue.write_certs()?;
        kueue.launch(source.clone()).await?;
        Ok(kueue)
    }

    pub fn source(&self) -> &KueueSource {
        &self.source
    }

    pub fn log_path(&self) -> PathBuf {
        self.host.work_dir.join("logs").join("kueue.log")
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(Process::pid)
    }

    /// Stops the manager; its objects stay.
    pub fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.stop(Duration::from_secs(10));
        }
    }

    /// SIGKILLs the manager, as a crash would; its objects stay.
    pub fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }

    /// Starts the same Kueue again after [`Kueue::stop`] or [`Kueue::kill`].
    pub async fn restart(&mut self) -> Result<(), ClusterError> {
        self.stop();
        self.launch(self.source.clone()).await
    }

    /// Replaces the running manager with another version in place: the new version's CRDs are
    /// applied over the old ones and every existing object is kept.
    /// The new version is built before the old one stops, so that Kueue is down only for the
    /// swap.
    pub async fn upgrade(&mut self, to: &KueueSource) -> Result<(), ClusterError> {
        materialize(&self.host.cache, to).await?;
        self.stop();
        self.launch(to.clone()).await
    }

    async fn client(&self) -> Result<kube::Client, ClusterError> {
        client_from_kubeconfig(&self.host.kubeconfig).await
    }

    async fn launch(&mut self, source: KueueSource) -> Result<(), ClusterError> {
        let built = materialize(&self.host.cache, &source).await?;
        let client = self.client().await?;
        let crds = crate::crds::read_dir(&built.crds)?;
        crate::crds::install(&client, &crds).await?;

        let dir = self.host.work_dir.join("kueue");
        let config = config::render(&config::ConfigInput {
            gates: source.feature_gates(),
            webhook_port: self.webhook_port,
            health_port: self.health_port,
            cert_dir: &dir.join("certs"),
        });
        let config_path = dir.join("config.yaml");
        std::fs::write(&config_path, config).map_err(|e| io(&config_path, e))?;
        let args = vec![
            format!("--config={}", config_path.display()),
            format!("--kubeconfig={}", self.host.kubeconfig.display()),
            "--zap-log-level=info".to_string(),
        ];
        let process = Process::start(
            "kueue",
            &built.binary,
            &args,
            &[],
            &self.log_path(),
            self.host.detached,
        )
        .map_err(|source| KueueError::Start {
            binary: built.binary.clone(),
            source,
        })?;
        let process = self.process.insert(process);
        let ready = format!("http://127.0.0.1:{}/readyz", self.health_port);
        let http = reqwest::Client::new();
        crate::health::wait_ready(process, &http, &ready, Duration::from_secs(120)).await?;
        self.source = source;

        let manifests = built.config.join("components/webhook/manifests.yaml");
        let text = std::fs::read_to_string(&manifests).map_err(|e| io(&manifests, e))?;
        let docs = serde_saphyr::from_multiple::<serde_json::Value>(&text).map_err(|e| {
            KueueError::Manifests {
                path: manifests,
                source: Box::new(e),
            }
        })?;
        let ca_path = self.host.work_dir.join("pki/ca.crt");
        let ca = std::fs::read_to_string(&ca_path).map_err(|e| io(&ca_path, e))?;
        let configs = webhooks::rewrite(docs, self.webhook_port, &ca)?;
        apply_webhooks(&client, configs).await?;
        wait_webhook_live(&client, Duration::from_secs(60)).await
    }

    fn write_certs(&self) -> Result<(), ClusterError> {
        let dir = self.host.work_dir.join("kueue").join("certs");
        crate::owner_only::create_dir(&dir).map_err(|e| io(&dir, e))?;
        let ca = Ca::load(&self.host.work_dir.join("pki"), "ca")?;
        let pair = ca.serving("kueue-webhook", &[], &[])?;
        write_pair(&pair, &dir)?;
        let metrics = Path::new(METRICS_CERT_DIR);
        crate::owner_only::create_dir(metrics)
            .and_then(|_| {
                crate::owner_only::replace(&metrics.join("tls.crt"), &pair.cert_pem)?;
                crate::owner_only::replace(&metrics.join("tls.key"), &pair.key_pem)
            })
            .map_err(|e| KueueError::MetricsCert(e).into())
    }
}

impl Drop for Kueue {
    fn drop(&mut self) {
        if self.host.detached {
            std::mem::forget(self.process.take());
        } else {
            self.stop();
        }
    }
}

async fn materialize(cache: &Path, source: &KueueSource) -> Result<Materialized, ClusterError> {
    let (source, cache) = (source.clone(), cache.to_path_buf());
    tokio::task::spawn_blocking(move || source.materialize(&cache))
        .await
        .map_err(KueueError::Prepare)?
}

fn write_pair(pair: &crate::pki::CertPair, dir: &Path) -> Result<(), ClusterError> {
    crate::owner_only::write(&dir.join("tls.crt"), &pair.cert_pem).map_err(|e| io(dir, e))?;
    crate::owner_only::write(&dir.join("tls.key"), &pair.key_pem).map_err(|e| io(dir, e))?;
    Ok(())
}

async fn apply_webhooks(
    client: &kube::Client,
    configs: Vec<serde_json::Value>,
) -> Result<(), ClusterError> {
    let params = PatchParams::apply("awconf").force();
    for config in configs {
        let name = config["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        match config["kind"].as_str() {
            Some("MutatingWebhookConfiguration") => {
                let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
                api.patch(&name, &params, &Patch::Apply(&config)).await?;
            }
            _ => {
                let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
                api.patch(&name, &params, &Patch::Apply(&config)).await?;
            }
        }
    }
    Ok(())
}

/// A dry-run AppWrapper with a queue name must come back suspended by Kueue's webhook.
async fn wait_webhook_live(client: &kube::Client, timeout: Duration) -> Result<(), ClusterError> {
    let ar = kube::discovery::ApiResource::erase::<appwrapper_controller::api::AppWrapper>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let mut probe = DynamicObject::new("awconf-webhook-probe", &ar).data(json!({
        "spec": { "suspend": false, "components": [{ "template": {
            "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "probe" },
            "spec": { "containers": [{ "name": "c", "image": "busybox" }] } } }] },
    }));
    let queue = ("kueue.x-k8s.io/queue-name".to_string(), "probe".to_string());
    probe.metadata.labels = Some(BTreeMap::from([queue]));
    let (api, probe) = (&api, &probe);
    poll::until(
        timeout,
        Duration::from_millis(250),
        move || async move {
            let dry_run = PostParams {
                dry_run: true,
                ..Default::default()
            };
            Ok(match api.create(&dry_run, probe).await {
                Ok(created) if created.data["spec"]["suspend"] == true => Look::Ready(()),
                Ok(_) => Look::NotYet("the AppWrapper was not suspended".into()),
                Err(e) => Look::NotYet(e.to_string()),
            })
        },
        |last| {
            ClusterError::from(KueueError::WebhookSilent {
                seconds: timeout.as_secs(),
                last,
            })
        },
    )
    .await
}

fn io(path: &Path, source: std::io::Error) -> KueueError {
    KueueError::Io {
        path: path.to_path_buf(),
        source,
    }
}
