//! A local cluster of one scenario's own: its own API server, Kueue, fake nodes, invariant
//! monitor and controller, so that it runs beside the other scenarios instead of alone. For a
//! scenario that stops the controller under test when that controller cannot be limited to
//! some AppWrappers (the reference operator), and for the one that upgrades Kueue in place
//! (every controller that can be started once more on the local cluster). The reference
//! operator listens on its fixed webhook port in a network namespace of its own
//! ([`clusters::netns`]); ours serves its webhooks at a port of its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clusters::netns::Netns;
use clusters::{Cluster as _, LocalCluster, LocalOptions};

use crate::client::steps_client;
use crate::flavor::apply_flavor;
use crate::kueue_upgrade::{KueueHandle, PendingUpgrade};
use crate::options::{ControllerMode, SuiteOptions};
use crate::reference;
use crate::under_test::ControllerUnderTest;
use monitor::Monitor;

/// Dropped in field order: the monitor, Kueue, the cluster, then the network namespace. The
/// cluster is held to be stopped then, and for its logs.
pub struct OwnCluster {
    /// For steps and hooks: requests time out.
    pub client: kube::Client,
    /// For watches: no read timeout.
    pub watch_client: kube::Client,
    pub kubeconfig: PathBuf,
    pub monitor: Monitor,
    /// Its Kueue, started at the release the upgrade starts from, for the upgrade scenario.
    pub kueue_upgrade: Option<PendingUpgrade>,
    _kueue: Arc<tokio::sync::Mutex<clusters::kueue::Kueue>>,
    kueue_log: PathBuf,
    cluster: LocalCluster,
    _netns: Option<Netns>,
    /// Holds one of the run's places for own clusters.
    _place: crate::places::Place,
}

impl OwnCluster {
    /// Brings up the cluster, Kueue under test and the controller of `mode` with `config`,
    /// which logs into `dir`; returns the controller, running, beside the cluster.
    /// `kueue_from`: the release its Kueue starts at, for the upgrade scenario; the Kueue
    /// under test otherwise.
    pub async fn up(
        options: &SuiteOptions,
        mode: &ControllerMode,
        config: appwrapper_controller::config::Config,
        dir: &Path,
        place: crate::places::Place,
        kueue_from: Option<clusters::kueue::KueueVersion>,
    ) -> anyhow::Result<(Self, ControllerUnderTest)> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let netns = match mode {
            ControllerMode::Reference { .. } => {
                Some(Netns::create().context("a network namespace for the scenario's operator")?)
            }
            ControllerMode::Embedded | ControllerMode::Process { .. } => None,
            _ => anyhow::bail!(
                "the {} controller cannot be started on a cluster of a scenario's own",
                mode.name()
            ),
        };
        let cluster = cluster_up(options, netns.as_ref()).await?;
        let source = match kueue_from {
            Some(from) => clusters::kueue::KueueSource::Release(from),
            None => options.kueue.clone(),
        };
        let kueue = kueue_up(&cluster, &source).await?;
        let kueue_log = kueue.log_path();
        let kueue = Arc::new(tokio::sync::Mutex::new(kueue));
        let kueue_upgrade = kueue_from.map(|from| {
            PendingUpgrade::new(from, options.kueue.clone(), KueueHandle::Own(kueue.clone()))
        });
        let (client, watch_client, controller) = match &netns {
            None => ours_on(&cluster, options, dir, kueue_log.clone()).await?,
            Some(netns) => reference_on(&cluster, netns, mode, config, dir).await?,
        };
        apply_flavor(&client).await?;
        let source =
            options.monitor_source(cluster.appwrapper_audit_log(), Some(cluster.etcd_url()));
        let monitor = Monitor::start(watch_client.clone(), source, Duration::from_secs(60)).await?;
        let own = OwnCluster {
            client,
            watch_client,
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            monitor,
            kueue_upgrade,
            _kueue: kueue,
            kueue_log,
            cluster,
            _netns: netns,
            _place: place,
        };
        Ok((own, controller))
    }

    pub fn kueue_log(&self) -> PathBuf {
        self.kueue_log.clone()
    }

    /// Its logs (the API server's audit log, its components' logs and Kueue's), which go
    /// with the cluster when it stops: a failed scenario's bundle keeps a copy.
    pub fn log_files(&self) -> Vec<PathBuf> {
        let logs = self.cluster.work_dir().join("logs");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&logs)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| path.is_file())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        if !files.contains(&self.kueue_log) {
            files.push(self.kueue_log.clone());
        }
        files
    }
}

/// A stand that did not come up says nothing about the controller under test: its cluster and
/// its Kueue (one exited while starting in CI once, with nothing in its log) each get a second
/// try, and the scenario fails only if that one fails too.
async fn cluster_up(options: &SuiteOptions, netns: Option<&Netns>) -> anyhow::Result<LocalCluster> {
    let cluster_options = || LocalOptions {
        kubernetes: options.kubernetes.clone(),
        namespace_reach: netns.map(Netns::host_address),
        ..LocalOptions::default()
    };
    twice("the scenario's own cluster", async || {
        LocalCluster::up(cluster_options()).await
    })
    .await
}

async fn kueue_up(
    cluster: &LocalCluster,
    source: &clusters::kueue::KueueSource,
) -> anyhow::Result<clusters::kueue::Kueue> {
    twice("Kueue on the scenario's own cluster", async || {
        clusters::kueue::Kueue::start(clusters::shared_kueue::host(cluster), source).await
    })
    .await
}

/// `start`, and once more if it fails.
async fn twice<T, E>(what: &str, start: impl AsyncFn() -> Result<T, E>) -> anyhow::Result<T>
where
    E: Into<anyhow::Error>,
{
    match start().await {
        Ok(started) => Ok(started),
        Err(first) => {
            let first = first.into();
            tracing::warn!("{what} did not come up, trying once more: {first:#}");
            start()
                .await
                .map_err(Into::into)
                .with_context(|| format!("{what}, tried twice (the first time: {first:#})"))
        }
    }
}

/// Ours, started as the run started its own, with the run's options but for the directory
/// its configuration, log and webhook certificates go to: (client, watch client, controller).
async fn ours_on(
    cluster: &LocalCluster,
    options: &SuiteOptions,
    dir: &Path,
    kueue_log: PathBuf,
) -> anyhow::Result<(kube::Client, kube::Client, ControllerUnderTest)> {
    let options = SuiteOptions {
        report_dir: dir.to_path_buf(),
        ..options.clone()
    };
    let environment = super::local::on_cluster(&options, cluster, kueue_log).await?;
    Ok((
        environment.client,
        environment.watch_client,
        environment.controller,
    ))
}

/// The reference operator in `netns`, its certificates mounted for it alone.
async fn reference_on(
    cluster: &LocalCluster,
    netns: &Netns,
    mode: &ControllerMode,
    config: appwrapper_controller::config::Config,
    dir: &Path,
) -> anyhow::Result<(kube::Client, kube::Client, ControllerUnderTest)> {
    let watch_client = cluster.client().await?;
    let client = steps_client(cluster.kubeconfig()).await?;
    let certificates = dir.join("certificates");
    clusters::owner_only::create_dir(&certificates)
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
    Ok((client, watch_client, controller))
}
