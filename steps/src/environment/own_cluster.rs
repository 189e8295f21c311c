//! A local cluster of one scenario's own, for a scenario that stops the controller under test
//! when that controller cannot be limited to some AppWrappers (the reference operator): its
//! own API server, Kueue, fake nodes, invariant monitor and controller, so that it runs beside
//! the other scenarios instead of alone. The operator listens on its fixed webhook port in a
//! network namespace of its own ([`clusters::netns`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clusters::netns::Netns;
use clusters::{Cluster as _, LocalCluster, LocalOptions};

use super::{apply_flavor, steps_client};
use crate::controller::ControllerUnderTest;
use crate::monitor::Monitor;
use crate::options::{ControllerMode, SuiteOptions};
use crate::reference;

/// Dropped in field order: the monitor, Kueue, the cluster, then the network namespace. The
/// cluster is held only to be stopped then.
pub struct OwnCluster {
    /// For steps and hooks: requests time out.
    pub client: kube::Client,
    /// For watches: no read timeout.
    pub watch_client: kube::Client,
    pub kubeconfig: PathBuf,
    pub monitor: Monitor,
    kueue: clusters::kueue::Kueue,
    _cluster: LocalCluster,
    _netns: Netns,
    /// Holds one of the run's places for own clusters.
    _place: tokio::sync::OwnedSemaphorePermit,
}

impl OwnCluster {
    /// Brings up the cluster, Kueue under test and the controller of `mode` with `config`,
    /// which logs into `dir`; returns the controller, running, beside the cluster.
    pub async fn up(
        options: &SuiteOptions,
        mode: &ControllerMode,
        config: appwrapper_controller::config::Config,
        dir: &Path,
        place: tokio::sync::OwnedSemaphorePermit,
    ) -> anyhow::Result<(Self, ControllerUnderTest)> {
        let ControllerMode::Reference { .. } = mode else {
            anyhow::bail!(
                "only the reference operator gets a cluster of its own per scenario, not the {} \
                 controller",
                mode.name()
            );
        };
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let netns = Netns::create().context("a network namespace for the scenario's operator")?;
        let cluster = LocalCluster::up(LocalOptions {
            kubernetes: options.kubernetes.clone(),
            namespace_reach: Some(netns.host_address()),
            ..LocalOptions::default()
        })
        .await
        .context("the scenario's own cluster")?;
        let kueue = clusters::kueue::Kueue::start(clusters::kueue::host(&cluster), &options.kueue)
            .await
            .context("Kueue on the scenario's own cluster")?;
        let watch_client = cluster.client().await?;
        let client = steps_client(cluster.kubeconfig()).await?;
        apply_flavor(&client).await?;
        let certificates = dir.join("certificates");
        clusters::private::create_dir(&certificates)
            .with_context(|| format!("creating {}", certificates.display()))?;
        let cert_dir = PathBuf::from(reference::CERT_DIR);
        reference::install(
            &client,
            &config,
            &cert_dir,
            // Down while the scenario has killed it, and no other scenario writes here.
            true,
            reference::Listens::InNamespace(netns.address()),
        )
        .await?;
        let inside = netns.inside(vec![(certificates.clone(), cert_dir)]);
        let mount = reference::mount_certificates(client.clone(), certificates);
        let mut controller =
            ControllerUnderTest::new(mode.clone(), config, &cluster.kubeconfig_at()?, dir)?
                .inside(inside)
                .with_certificate_mount(mount);
        super::local::start_reference(&mut controller, &client, &watch_client).await?;
        let monitor = Monitor::start(watch_client.clone(), Duration::from_secs(60)).await?;
        let own = OwnCluster {
            client,
            watch_client,
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            monitor,
            kueue,
            _cluster: cluster,
            _netns: netns,
            _place: place,
        };
        Ok((own, controller))
    }

    pub fn kueue_log(&self) -> PathBuf {
        self.kueue.log_path()
    }
}
