//! The controller under test: embedded in this process, our binary as a child process, the
//! reference operator as a child process, or any external command. Scenarios stop, kill and
//! restart it.

mod launch;
pub mod pool;
mod settings;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use appwrapper_controller::config::Config;
use appwrapper_controller::control_loop::Handle;
use appwrapper_controller::duration::GoDuration;
use appwrapper_controller::webhook::WebhookServer;
use clusters::install::controller::own;
use clusters::install::logs::PodLogs;
use clusters::install::scale::Workload;
use clusters::process::Process;

pub use launch::find_binary;
pub(crate) use settings::write_config_map;
pub use settings::{EXTERNAL_OPERATOR_NAMESPACE, operator_config_path};
use settings::{write_config, write_operator_config};

use crate::options::ControllerMode;
use crate::webhook::WebhookEndpoint;

/// The suite's fault-tolerance defaults: seconds instead of minutes, so that a scenario that
/// does not set an annotation still finishes quickly. `gracePeriodCeiling` is low too, so that
/// the clamp is observable.
pub fn suite_config() -> Config {
    let mut config = Config::default();
    let ft = &mut config.appwrapper.fault_tolerance;
    ft.admission_grace_period = GoDuration::from_secs(20);
    ft.warmup_grace_period = GoDuration::from_secs(30);
    ft.failure_grace_period = GoDuration::from_secs(5);
    ft.reset_pause = GoDuration::from_secs(2);
    ft.retry_limit = 3;
    ft.deletion_grace_period = GoDuration::from_secs(15);
    ft.grace_period_ceiling = GoDuration::from_secs(30);
    config.webhooks_enabled = false;
    config
}

/// The label that gives an AppWrapper to a scenario's own controller (its value is the
/// controller's [`ControllerUnderTest::own_label`]); the shared controller leaves AppWrappers
/// with it alone.
pub const OWN_CONTROLLER_LABEL: &str = "awconf.dev/controller";

/// The label selector of the shared controller where scenarios can have controllers of their
/// own (`None`: it reconciles every AppWrapper).
pub fn shared_selector(mode: &ControllerMode) -> Option<String> {
    mode.starts_own_controllers()
        .then(|| format!("!{OWN_CONTROLLER_LABEL}"))
}

enum Running {
    Embedded(Handle),
    Child(Process),
    /// Its Deployment has a replica.
    InCluster,
}

pub struct ControllerUnderTest {
    mode: ControllerMode,
    config: Config,
    config_path: PathBuf,
    kubeconfig: PathBuf,
    log_path: PathBuf,
    running: Option<Running>,
    starts: usize,
    /// Where a child controller serves its webhooks (the process mode).
    webhook: Option<WebhookEndpoint>,
    /// Runs beside a reference operator: copies its certificate Secret into its directory.
    certificate_mount: Option<tokio::task::JoinHandle<()>>,
    /// The Deployment of an in-cluster controller.
    workload: Option<Workload>,
    /// The label selector of the AppWrappers it reconciles (`None`: all).
    selector: Option<String>,
    /// The embedded controller's webhook server, served in this process: it outlives a stop
    /// or a kill of the controller, like a separate webhook deployment.
    webhook_server: Option<WebhookServer>,
    /// A child's `HOSTNAME`, which begins its leader-election identity.
    identity: Option<String>,
    /// A scenario's own controller in the cluster: the Deployment its first start creates
    /// beside the shared one, and the follower of its pods' logs.
    own_deployment: Option<String>,
    /// A scenario's own controller's value of [`OWN_CONTROLLER_LABEL`].
    own_label: Option<String>,
    pod_logs: Option<PodLogs>,
    /// A child that runs in a network namespace (the reference operator on a scenario's own
    /// cluster, whose webhook port is fixed).
    inside: Option<clusters::netns::Inside>,
}

impl Drop for ControllerUnderTest {
    fn drop(&mut self) {
        if let Some(mount) = self.certificate_mount.take() {
            mount.abort();
        }
    }
}

impl ControllerUnderTest {
    /// Writes the configuration file (used by the process and external modes).
    pub fn new(
        mode: ControllerMode,
        config: Config,
        kubeconfig: &Path,
        report_dir: &Path,
    ) -> anyhow::Result<Self> {
        let config_path = report_dir.join("controller-config.yaml");
        write_config(&config, &config_path)?;
        if let ControllerMode::External { .. } = mode {
            write_operator_config(&config, &operator_config_path(report_dir))?;
        }
        Ok(ControllerUnderTest {
            mode,
            config,
            config_path,
            kubeconfig: kubeconfig.to_path_buf(),
            log_path: report_dir.join("controller.log"),
            running: None,
            starts: 0,
            webhook: None,
            certificate_mount: None,
            workload: None,
            selector: None,
            webhook_server: None,
            identity: None,
            own_deployment: None,
            own_label: None,
            pod_logs: None,
            inside: None,
        })
    }

    /// A child begins its leader-election identity (`<name>_<random>`) with `name` from its
    /// next start on.
    pub fn set_identity(&mut self, name: &str) {
        self.identity = Some(name.to_owned());
    }

    pub fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// Another replica of our controller's binary beside this one, electing the same leader
    /// from the same configuration, as a Deployment with two replicas runs it. It serves no
    /// webhooks (this one does), no metrics or health endpoints, and logs into `dir`.
    pub fn replica(&self, name: &str, dir: &Path) -> anyhow::Result<Self> {
        anyhow::ensure!(
            matches!(self.mode, ControllerMode::Process { .. }),
            "only our controller's binary runs as a second replica here, not the {} controller",
            self.mode.name()
        );
        anyhow::ensure!(
            self.config.controller_manager.leader_election,
            "two replicas need leader election (controllerManager.leaderElection)"
        );
        let mut config = self.config.clone();
        config.webhooks_enabled = false;
        let manager = &mut config.controller_manager;
        manager.metrics.bind_address = "0".into();
        manager.health.bind_address = "0".into();
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut replica =
            ControllerUnderTest::new(self.mode.clone(), config, &self.kubeconfig, dir)?;
        replica.selector = self.selector.clone();
        replica.set_identity(name);
        Ok(replica)
    }

    /// Where scenarios that stop the controller get one of their own, the shared one leaves
    /// their AppWrappers to them.
    pub fn shared(mut self) -> Self {
        self.selector = shared_selector(&self.mode);
        self
    }

    /// A controller of the same mode and settings for the AppWrappers labelled
    /// [`OWN_CONTROLLER_LABEL`]`=<label>` alone, writing its configuration and log into `dir`.
    /// It serves no webhooks (the shared controller does), no metrics or health endpoints, and
    /// elects no leader. In the cluster it is a Deployment of its own, `own-<label>`, created at
    /// its first start.
    pub fn own(&self, label: &str, dir: &Path) -> anyhow::Result<Self> {
        anyhow::ensure!(
            self.mode.starts_own_controllers(),
            "the {} controller cannot be started once more for one scenario",
            self.mode.name()
        );
        let mut config = self.config.clone();
        config.webhooks_enabled = false;
        let manager = &mut config.controller_manager;
        manager.metrics.bind_address = "0".into();
        manager.health.bind_address = "0".into();
        manager.leader_election = false;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut own = ControllerUnderTest::new(self.mode.clone(), config, &self.kubeconfig, dir)?;
        own.selector = Some(format!("{OWN_CONTROLLER_LABEL}={label}"));
        own.own_label = Some(label.to_owned());
        if let ControllerMode::InCluster { .. } = self.mode {
            own.own_deployment = Some(format!("own-{label}"));
        }
        Ok(own)
    }

    /// The value of [`OWN_CONTROLLER_LABEL`] that gives an AppWrapper to this controller, when
    /// it is a scenario's own.
    pub fn own_label(&self) -> Option<&str> {
        self.own_label.as_deref()
    }

    /// A child controller serves its webhooks at `endpoint` (with `webhooksEnabled` in its
    /// config).
    pub fn with_webhook(mut self, endpoint: WebhookEndpoint) -> Self {
        self.webhook = Some(endpoint);
        self
    }

    /// An in-cluster controller runs as `workload`, already started by its install; its log
    /// is followed into [`Self::log_path`].
    pub fn with_workload(mut self, workload: Workload) -> Self {
        self.workload = Some(workload);
        self.running = Some(Running::InCluster);
        self.starts = 1;
        self
    }

    /// The embedded controller's webhooks are served by `server` (at [`Self::with_webhook`]'s
    /// endpoint).
    pub fn with_webhook_server(mut self, server: WebhookServer) -> Self {
        self.webhook_server = Some(server);
        self
    }

    /// A child runs `inside` a network namespace.
    pub fn inside(mut self, inside: clusters::netns::Inside) -> Self {
        self.inside = Some(inside);
        self
    }

    /// A reference operator's certificates are kept in place by `mount` while it runs.
    pub fn with_certificate_mount(mut self, mount: tokio::task::JoinHandle<()>) -> Self {
        self.certificate_mount = Some(mount);
        self
    }

    pub fn mode(&self) -> &ControllerMode {
        &self.mode
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Where it serves its webhooks, when it serves them at an endpoint of the run's.
    pub fn webhook(&self) -> Option<&WebhookEndpoint> {
        self.webhook.as_ref()
    }

    /// The log of a child controller; the embedded one logs through `tracing`.
    pub fn log_path(&self) -> Option<&Path> {
        match self.mode {
            ControllerMode::Embedded => None,
            _ => Some(&self.log_path),
        }
    }

    pub fn is_running(&mut self) -> bool {
        match &mut self.running {
            Some(Running::Child(process)) => process.exited().is_none(),
            Some(Running::Embedded(_) | Running::InCluster) => true,
            None => false,
        }
    }

    /// For a child controller that has exited: its exit status and the last lines of its log,
    /// as a run that waited for it reports them.
    pub fn exit_report(&mut self) -> Option<String> {
        let Some(Running::Child(process)) = &mut self.running else {
            return None;
        };
        let status = process.exited()?;
        Some(format!(
            "the controller under test exited ({status}); the last lines of its log {}:\n{}",
            self.log_path.display(),
            process.log_tail(20)
        ))
    }

    /// The process id of a child controller while it runs (`None` embedded or in a cluster).
    pub fn pid(&self) -> Option<u32> {
        match &self.running {
            Some(Running::Child(process)) => Some(process.pid()),
            _ => None,
        }
    }

    pub fn starts(&self) -> usize {
        self.starts
    }

    /// Freezes a child with SIGSTOP (a no-op for other modes); `false` when none runs.
    pub fn pause(&self) -> bool {
        match &self.running {
            Some(Running::Child(process)) => {
                process.pause();
                true
            }
            _ => false,
        }
    }

    /// Lets a paused child run again with SIGCONT.
    pub fn resume(&self) {
        if let Some(Running::Child(process)) = &self.running {
            process.resume();
        }
    }

    /// Waits up to `timeout` for a child to exit by itself; its exit status, once it has.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(Running::Child(process)) = &mut self.running
                && let Some(status) = process.exited()
            {
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts the controller (a no-op when it runs). `client` must belong to the runtime the
    /// embedded controller is to run on.
    pub async fn start(&mut self, client: &kube::Client) -> anyhow::Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let running = match &self.mode {
            ControllerMode::Embedded => launch::embedded(self, client).await?,
            ControllerMode::Process { binary } => launch::process(self, binary.as_deref())?,
            ControllerMode::Reference { version } => launch::reference(self, version)?,
            ControllerMode::InCluster { .. } | ControllerMode::Installed { .. } => {
                if self.workload.is_none() && self.own_deployment.is_some() {
                    self.deploy_own(client).await?;
                }
                self.in_cluster()?.start(Duration::from_secs(120)).await?;
                Running::InCluster
            }
            ControllerMode::External { command } => launch::external(self, command)?,
        };
        self.running = Some(running);
        self.starts += 1;
        crate::latency::probes::controller_interrupted();
        tracing::info!(mode = self.mode.name(), "controller under test started");
        Ok(())
    }

    /// Stops the controller in an orderly way: SIGTERM for a child, shutdown for the embedded
    /// one (it finishes the reconciles in flight).
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        crate::latency::probes::controller_interrupted();
        match self.running.take() {
            Some(Running::Embedded(handle)) => handle.shutdown().await?,
            Some(Running::Child(mut process)) => {
                tokio::task::spawn_blocking(move || process.stop(Duration::from_secs(10)))
                    .await
                    .context("stopping the controller")?;
            }
            Some(Running::InCluster) => self.in_cluster()?.stop().await?,
            None => {}
        }
        tracing::info!("controller under test stopped");
        Ok(())
    }

    /// Kills the controller as a crash would: SIGKILL for a child; the embedded controller's
    /// task is aborted (reconciles in flight are dropped unfinished).
    pub async fn kill(&mut self) -> anyhow::Result<()> {
        crate::latency::probes::controller_interrupted();
        match self.running.take() {
            Some(Running::Child(mut process)) => {
                tokio::task::spawn_blocking(move || process.kill())
                    .await
                    .context("killing the controller")?;
            }
            Some(Running::Embedded(handle)) => handle.abort().await,
            Some(Running::InCluster) => self.in_cluster()?.kill().await?,
            None => return Ok(()),
        }
        tracing::info!("controller under test killed");
        Ok(())
    }
}

impl ControllerUnderTest {
    /// Restarts it with `config` and waits until its webhooks answer with it.
    pub async fn restart_with(
        &mut self,
        client: &kube::Client,
        watch_client: &kube::Client,
        config: Config,
    ) -> anyhow::Result<()> {
        self.reconfigure(client, config).await?;
        self.stop().await?;
        self.start(watch_client).await?;
        crate::webhook::wait_until_effective(client, || self.exit_report()).await
    }

    /// Stops the embedded webhook server, at the end of the run.
    pub async fn stop_webhook_server(&mut self) {
        if let Some(server) = self.webhook_server.take() {
            server.stop().await;
        }
    }

    /// Creates a scenario's own Deployment beside the shared controller's and follows its log.
    async fn deploy_own(&mut self, client: &kube::Client) -> anyhow::Result<()> {
        let name = self.own_deployment.clone().unwrap_or_default();
        let mut config = crate::operator_config::operator_config(
            &self.config,
            &crate::operator_config::Placement::InCluster {
                namespace: clusters::install::controller::manifests::NAMESPACE,
            },
        )?;
        // Its pods serve their probes at the release's addresses, but no webhooks.
        config["webhooksEnabled"] = serde_json::json!(false);
        let workload = own::deploy(
            client,
            &name,
            self.selector.as_deref().unwrap_or_default(),
            &objects::yaml::render(&config),
            Duration::from_secs(120),
        )
        .await
        .with_context(|| format!("deploying the scenario's own controller {name}"))?;
        self.pod_logs = Some(PodLogs::follow(
            client.clone(),
            &workload.namespace,
            &workload.selector,
            &self.log_path,
        )?);
        self.workload = Some(workload);
        Ok(())
    }

    /// Stops it for good: a scenario's own Deployment is deleted too.
    pub async fn remove(mut self) -> anyhow::Result<()> {
        match (&self.own_deployment, self.workload.take()) {
            (Some(_), Some(workload)) => {
                self.running = None;
                own::remove(&workload).await?;
            }
            _ => self.stop().await?,
        }
        self.stop_webhook_server().await;
        Ok(())
    }

    fn in_cluster(&self) -> anyhow::Result<&Workload> {
        self.workload
            .as_ref()
            .context("the in-cluster controller's Deployment is not known (with_workload)")
    }
}

#[cfg(test)]
mod tests {
    use super::launch::external_command;
    use super::*;
    use crate::options::ExternalCommand;

    #[test]
    fn an_external_controller_gets_the_suite_settings_in_the_operator_format() {
        let dir = tempfile::tempdir().unwrap();
        let mode = ControllerMode::External {
            command: ExternalCommand::Shell("manager".into()),
        };
        ControllerUnderTest::new(mode, suite_config(), Path::new("/k"), dir.path()).unwrap();
        let text = std::fs::read_to_string(operator_config_path(dir.path())).unwrap();
        let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(value["webhooksEnabled"], serde_json::json!(false));
        let serving = ControllerMode::External {
            command: ExternalCommand::Argv(vec!["manager".into(), "--port={webhook-port}".into()]),
        };
        assert!(serving.serves_webhooks() && !mode_of_manager().serves_webhooks());
        assert_eq!(
            value["appwrapper"]["faultTolerance"]["admissionGracePeriod"],
            serde_json::json!(20_000_000_000u64)
        );
        assert_eq!(
            value["certManagement"]["namespace"],
            serde_json::json!(EXTERNAL_OPERATOR_NAMESPACE)
        );
    }

    fn mode_of_manager() -> ControllerMode {
        ControllerMode::External {
            command: ExternalCommand::Shell("manager".into()),
        }
    }

    #[test]
    fn an_external_command_gets_the_webhook_port_and_certificates_it_names() {
        let endpoint = WebhookEndpoint::for_test(Path::new("/certs"), 9876);
        let command = external_command(
            &ExternalCommand::Shell(
                "m --kubeconfig {kubeconfig} --port {webhook-port} --certs {webhook-cert-dir}"
                    .into(),
            ),
            Path::new("/k"),
            Path::new("/c"),
            Path::new("/o"),
            Some(&endpoint),
        );
        assert_eq!(
            command.to_string(),
            "m --kubeconfig /k --port 9876 --certs /certs"
        );
    }

    #[test]
    fn the_suite_config_is_valid_and_short() {
        let config = suite_config();
        config.validate().unwrap();
        let ft = &config.appwrapper.fault_tolerance;
        assert!(ft.warmup_grace_period <= GoDuration::from_secs(60));
        let text = serde_saphyr::to_string(&config).unwrap();
        assert_eq!(Config::from_yaml(&text).unwrap(), config);
    }

    #[test]
    fn an_own_controller_takes_only_its_namespace_and_serves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let process = ControllerMode::Process { binary: None };
        let mut config = suite_config();
        config.webhooks_enabled = true;
        config.controller_manager.leader_election = true;
        let shared = ControllerUnderTest::new(process, config, Path::new("/k"), dir.path())
            .unwrap()
            .shared();
        assert_eq!(shared.selector.as_deref(), Some("!awconf.dev/controller"));

        let own = shared.own("ns-1", &dir.path().join("own")).unwrap();
        assert_eq!(own.selector.as_deref(), Some("awconf.dev/controller=ns-1"));
        assert_eq!(own.own_label(), Some("ns-1"));
        let text = std::fs::read_to_string(dir.path().join("own/controller-config.yaml")).unwrap();
        let written = Config::from_yaml(&text).unwrap();
        assert!(!written.webhooks_enabled);
        assert!(!written.controller_manager.leader_election);
        assert_eq!(written.controller_manager.metrics.bind_address, "0");
        assert_eq!(written.controller_manager.health.bind_address, "0");
        assert_eq!(
            own.log_path(),
            Some(dir.path().join("own/controller.log").as_path())
        );
    }

    #[test]
    fn in_the_cluster_a_scenario_gets_a_deployment_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let in_cluster = ControllerMode::InCluster { image: None };
        let shared =
            ControllerUnderTest::new(in_cluster, suite_config(), Path::new("/k"), dir.path())
                .unwrap()
                .shared();
        assert_eq!(shared.selector.as_deref(), Some("!awconf.dev/controller"));
        let own = shared.own("ns-1", &dir.path().join("own")).unwrap();
        assert_eq!(own.own_deployment.as_deref(), Some("own-ns-1"));
        assert_eq!(own.selector.as_deref(), Some("awconf.dev/controller=ns-1"));
    }

    #[rstest::rstest]
    #[case::reference(ControllerMode::Reference { version: "v1.2.2".into() })]
    #[case::installed(ControllerMode::Installed { namespace: "appwrapper-system".into() })]
    fn a_controller_the_harness_cannot_start_again_is_never_shared_with_own_controllers(
        #[case] mode: ControllerMode,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let shared = ControllerUnderTest::new(mode, suite_config(), Path::new("/k"), dir.path())
            .unwrap()
            .shared();
        assert_eq!(shared.selector, None);
        assert!(shared.own("ns-1", &dir.path().join("own")).is_err());
    }
}
