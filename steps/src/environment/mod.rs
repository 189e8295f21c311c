//! Everything a run needs before its first scenario: the cluster, Kueue, KWOK's stages, the
//! controller under test with its webhooks, and the ResourceFlavor. On the local cluster they
//! run on this machine ([`local`]); on any other cluster they run inside it ([`remote`]).

mod installed;
pub(crate) mod local;
pub mod own_cluster;
mod remote;
pub mod toolchain;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clusters::kueue::objects as kueue_objects;
use serde_json::json;

use crate::controller::ControllerUnderTest;
use crate::harness::{FLAVOR, FLAVOR_TOLERATION_KEY};
use crate::options::{ClusterChoice, SuiteOptions};

/// The run's environment did not come up (the cluster, Kueue, the controller under test or
/// the invariant monitor): `awconf` exits 3 for it, not 2 as for a usage error.
#[derive(Debug, thiserror::Error)]
#[error("the environment did not come up")]
pub struct EnvironmentFailed(#[source] Box<dyn std::error::Error + Send + Sync>);

impl From<anyhow::Error> for EnvironmentFailed {
    fn from(error: anyhow::Error) -> Self {
        EnvironmentFailed(error.into())
    }
}

pub struct Environment {
    pub kubeconfig: PathBuf,
    /// For steps and hooks: requests time out.
    pub client: kube::Client,
    /// For watches: no read timeout.
    pub watch_client: kube::Client,
    pub kueue_log: PathBuf,
    pub controller: ControllerUnderTest,
    /// What the run changed on an installed controller, put back at the end.
    pub restore: Option<installed::Restore>,
    pub capabilities: clusters::Capabilities,
    /// Kueue as a process of the run (the local cluster's), which steps may upgrade.
    pub kueue: Option<&'static tokio::sync::Mutex<clusters::kueue::Kueue>>,
    /// Kept for the run and released after it: a created cluster, followed logs.
    pub keep: Vec<Box<dyn std::any::Any + Send + Sync>>,
}

impl Environment {
    /// Brings up what `options` asks for. With `kueue_from`, the local cluster's Kueue starts
    /// at that release instead of the Kueue under test (for the upgrade scenario).
    pub async fn up(
        options: &SuiteOptions,
        kueue_from: Option<clusters::kueue::KueueVersion>,
    ) -> anyhow::Result<Self> {
        let environment = match &options.cluster {
            ClusterChoice::Local => local::up(options, kueue_from).await?,
            _ => remote::up(options).await?,
        };
        apply_flavor(&environment.client).await?;
        Ok(environment)
    }

    /// Like [`Environment::up`] with `--cluster local`, but on a local cluster of the
    /// caller's (its own fake nodes, an audit log) whose Kueue runs and logs to `kueue_log`.
    pub async fn on_local_cluster(
        options: &SuiteOptions,
        cluster: &clusters::LocalCluster,
        kueue_log: PathBuf,
    ) -> anyhow::Result<Self> {
        let environment = local::on_cluster(options, cluster, kueue_log).await?;
        apply_flavor(&environment.client).await?;
        Ok(environment)
    }

    /// Stops what belongs to this run. A controller installed into the cluster stays, as
    /// installed; one started by the run is stopped.
    pub async fn down(
        controller: &tokio::sync::Mutex<ControllerUnderTest>,
        restore: Option<installed::Restore>,
        client: &kube::Client,
    ) {
        if let Some(restore) = restore {
            restore.apply(client).await;
        }
        let mut controller = controller.lock().await;
        if !controller.mode().in_cluster()
            && let Err(e) = controller.stop().await
        {
            tracing::warn!("stopping the controller: {e:#}");
        }
        // Scenarios' own controllers that an interrupted After hook left in the cluster.
        if controller.mode().in_cluster()
            && controller.mode().starts_own_controllers()
            && let Err(e) = clusters::install::controller::own::remove_all(client).await
        {
            tracing::warn!("deleting the scenarios' own controllers: {e}");
        }
        controller.stop_webhook_server().await;
    }
}

/// A client whose requests time out, so that a hung API call fails its step instead of
/// hanging the run (cucumber has no step timeout).
async fn steps_client(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    config.write_timeout = Some(Duration::from_secs(30));
    // Named, so that an audit log tells the harness's requests from the controller's.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(HARNESS_USER_AGENT),
    ));
    Ok(kube::Client::try_from(config)?)
}

/// The User-Agent of the harness's step client (the embedded controller's client sends none).
pub const HARNESS_USER_AGENT: &str = "awconf-harness";

/// The ResourceFlavor of every scenario's ClusterQueue: fake nodes only, whose taint
/// admission makes the pods tolerate.
pub async fn apply_flavor(client: &kube::Client) -> anyhow::Result<()> {
    let mut flavor = kueue_objects::resource_flavor(FLAVOR);
    flavor["spec"] = json!({
        "nodeLabels": { "type": "kwok" },
        "tolerations": [{ "key": FLAVOR_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule" }],
    });
    kueue_objects::apply(client, &flavor)
        .await
        .context("creating the ResourceFlavor")?;
    Ok(())
}
