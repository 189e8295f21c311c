//! The test environment of the conformance suite, apart from its Gherkin: everything a run
//! needs before its first scenario (the cluster, Kueue, KWOK's stages, the controller under
//! test in any mode with its webhooks, and the ResourceFlavor) and the run's options. On the
//! local cluster they run on this machine ([`local`]); on any other cluster they run inside it
//! ([`remote`]). The steps, the load bench and tools build on it alike.

mod client;
mod environment;
pub mod fixtures;
mod flavor;
mod installed;
pub mod kueue_upgrade;
pub mod latency;
pub mod local;
pub mod operator_config;
pub mod options;
pub mod own_cluster;
pub mod places;
pub mod prebuild;
pub mod reference;
mod remote;
pub mod under_test;
pub mod wait;
pub mod webhook;

pub use client::HARNESS_USER_AGENT;
pub use environment::{Environment, EnvironmentFailed};
pub use flavor::{FLAVOR, FLAVOR_TOLERATION_KEY, apply_flavor};
pub use options::{ClusterChoice, ControllerMode, FeatureSet, SuiteOptions};

use std::path::PathBuf;

use crate::under_test::ControllerUnderTest;

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
