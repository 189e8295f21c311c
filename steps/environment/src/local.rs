//! The local cluster: the embedded control plane and Kueue as host processes, and the
//! controller under test in this process or as a child beside them.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clusters::Cluster as _;

use crate::client::steps_client;
use crate::environment::Environment;
use crate::options::{ControllerMode, SuiteOptions};
use crate::reference;
use crate::under_test::{ControllerUnderTest, suite_config};
use crate::webhook::WebhookEndpoint;

pub async fn up(
    options: &SuiteOptions,
    kueue_from: Option<clusters::kueue::KueueVersion>,
) -> anyhow::Result<Environment> {
    if options.controller.in_cluster() {
        anyhow::bail!(
            "--controller in-cluster runs the controller as a pod; the local cluster has no node \
             for it unless it has a real one: start one with `awconf cluster up --real-nodes 1 \
             --nodes 0 --detach` and run with --cluster existing --kubeconfig <its kubeconfig> \
             --install kueue,kwok"
        );
    }
    let source = match kueue_from {
        Some(from) => clusters::kueue::KueueSource::Release(from),
        None => options.kueue.clone(),
    };
    match kueue_from {
        Some(from) => println!(
            "awconf: bringing up the embedded cluster with Kueue {from}, which the upgrade \
             scenario replaces with Kueue {} before any other scenario runs",
            options.kueue.label()
        ),
        None => println!(
            "awconf: bringing up the embedded cluster with Kueue {} (built on first use)",
            source.label()
        ),
    }
    let kubernetes = options.kubernetes.clone();
    let (cluster, kueue) = tokio::task::spawn_blocking(move || {
        clusters::shared_kueue::shared_at(&source, &kubernetes)
    })
    .await
    .context("the cluster start-up task failed")?
    .map_err(anyhow::Error::msg)?;
    let kueue_log = kueue.lock().await.log_path();
    let mut environment = on_cluster(options, cluster, kueue_log).await?;
    environment.kueue = Some(kueue);
    Ok(environment)
}

/// The controller under test on `cluster`, whose Kueue is already up and logs to `kueue_log`.
pub async fn on_cluster(
    options: &SuiteOptions,
    cluster: &clusters::LocalCluster,
    kueue_log: std::path::PathBuf,
) -> anyhow::Result<Environment> {
    let watch_client = cluster.client().await?;
    let client = steps_client(cluster.kubeconfig()).await?;
    let controller = controller_with_webhooks(options, cluster, &client, &watch_client).await?;
    Ok(Environment {
        kubeconfig: cluster.kubeconfig().to_path_buf(),
        client,
        watch_client,
        kueue_log,
        audit_log: cluster.appwrapper_audit_log(),
        etcd: Some(cluster.etcd_url()),
        controller,
        restore: None,
        capabilities: cluster.capabilities(),
        kueue: None,
        keep: Vec::new(),
    })
}

/// Starts the controller under test and registers its webhooks beside Kueue's: served here
/// for the embedded controller (the controller keeps the server), by the child in the process mode, by
/// the reference operator through its Service, by an external command that names
/// `{webhook-port}` on that port (others bring their own, or none).
async fn controller_with_webhooks(
    options: &SuiteOptions,
    cluster: &clusters::LocalCluster,
    client: &kube::Client,
    watch_client: &kube::Client,
) -> anyhow::Result<ControllerUnderTest> {
    let mut config = suite_config();
    config.webhooks_enabled = options.controller.is_child() || options.controller.serves_webhooks();
    // Ports a child picks itself: controller-runtime's :8443 and :8081 would clash with a
    // second run on this machine.
    let manager = &mut config.controller_manager;
    manager.metrics.bind_address = "127.0.0.1:0".into();
    manager.health.bind_address = "127.0.0.1:0".into();
    let mut controller = ControllerUnderTest::new(
        options.controller.clone(),
        config.clone(),
        cluster.kubeconfig(),
        &options.report_dir,
    )?
    .shared();
    // A child controller serves the webhooks itself, so they are down while it is: there
    // they fail open, or `@serial` scenarios could not create AppWrappers meanwhile (no
    // other scenario runs then). The embedded server outlives the controller: fail closed.
    let fail_open = options.controller.is_child() || options.controller.serves_webhooks();
    match &options.controller {
        ControllerMode::External { .. } if options.controller.serves_webhooks() => {
            let endpoint = WebhookEndpoint::prepare(cluster, &options.report_dir)?;
            controller = controller.with_webhook(endpoint.clone());
            controller.start(watch_client).await?;
            endpoint
                .register(client, fail_open, || controller.exit_report())
                .await?;
            Ok(controller)
        }
        ControllerMode::External { .. } => {
            controller.start(watch_client).await?;
            Ok(controller)
        }
        ControllerMode::Reference { version } => {
            let version = version.clone();
            println!("awconf: the reference operator {version} (built on first use)");
            tokio::task::spawn_blocking(move || reference::build(&version))
                .await
                .context("the reference build task failed")??;
            let cert_dir = std::path::PathBuf::from(reference::CERT_DIR);
            reference::install(
                client,
                &config,
                &cert_dir,
                fail_open,
                reference::Listens::Here,
            )
            .await?;
            let mount = reference::mount_certificates(client.clone(), cert_dir);
            controller = controller.with_certificate_mount(mount);
            start_reference(&mut controller, client, watch_client).await?;
            Ok(controller)
        }
        ControllerMode::InCluster { .. } | ControllerMode::Installed { .. } => {
            anyhow::bail!("an in-cluster controller needs a cluster that runs its pod")
        }
        ControllerMode::Embedded | ControllerMode::Process { .. } => {
            let endpoint = WebhookEndpoint::prepare(cluster, &options.report_dir)?;
            if let ControllerMode::Embedded = options.controller {
                let server = endpoint.serve(&config, client.clone()).await?;
                controller = controller.with_webhook_server(server);
            }
            controller = controller.with_webhook(endpoint.clone());
            controller.start(watch_client).await?;
            endpoint
                .register(client, fail_open, || controller.exit_report())
                .await?;
            Ok(controller)
        }
    }
}

/// Starts a stopped `controller` and points the webhook configurations at it, as its first
/// start did: through the reference operator's Service, or by URL at the endpoint where our
/// child or this process serves them. Returns once the webhooks answer.
pub async fn take_over(
    controller: &mut ControllerUnderTest,
    client: &kube::Client,
    watch_client: &kube::Client,
) -> anyhow::Result<()> {
    let mode = controller.mode().clone();
    let fail_open = mode.is_child() || mode.serves_webhooks();
    match mode {
        ControllerMode::Reference { .. } => {
            let cert_dir = std::path::PathBuf::from(reference::CERT_DIR);
            reference::install(
                client,
                controller.config(),
                &cert_dir,
                fail_open,
                reference::Listens::Here,
            )
            .await?;
            start_reference(controller, client, watch_client).await
        }
        ControllerMode::Embedded | ControllerMode::Process { .. } => {
            let endpoint = controller
                .webhook()
                .cloned()
                .context("the controller has no webhook endpoint to register")?;
            controller.start(watch_client).await?;
            endpoint
                .register(client, fail_open, || controller.exit_report())
                .await
        }
        other => anyhow::bail!(
            "the {} controller is not one the harness starts and registers itself",
            other.name()
        ),
    }
}

/// Runs `from`, the controller the `@controller-upgrade` scenario starts from, in place of
/// `shared`, the controller under test, which the caller has stopped: the same settings, all
/// AppWrappers but those of scenarios with a controller of their own, and the webhooks. It
/// writes its configuration and log into `dir`.
pub async fn upgrade_from(
    from: &ControllerMode,
    shared: &ControllerUnderTest,
    kubeconfig: &std::path::Path,
    dir: &std::path::Path,
    clients: (&kube::Client, &kube::Client),
) -> anyhow::Result<ControllerUnderTest> {
    let (client, watch_client) = clients;
    let mut config = shared.config().clone();
    config.webhooks_enabled = true;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut controller = ControllerUnderTest::new(from.clone(), config, kubeconfig, dir)?.shared();
    match from {
        ControllerMode::Process { .. } => {
            let endpoint = shared
                .webhook()
                .context(
                    "the controller under test serves no webhooks at an endpoint of the run's",
                )?
                .elsewhere()?;
            controller = controller.with_webhook(endpoint);
        }
        ControllerMode::Reference { version } => {
            let version = version.clone();
            tokio::task::spawn_blocking(move || reference::build(&version))
                .await
                .context("the reference build task failed")??;
            let mount = reference::mount_certificates(
                client.clone(),
                std::path::PathBuf::from(reference::CERT_DIR),
            );
            controller = controller.with_certificate_mount(mount);
        }
        other => anyhow::bail!(
            "an upgrade starts from the reference operator or a build of ours, not from the {} \
             controller",
            other.name()
        ),
    }
    take_over(&mut controller, client, watch_client).await?;
    Ok(controller)
}

/// Starts the reference operator and waits until its webhooks answer. Its first start exits
/// when its certificate Secret was still empty (in a cluster the pod restarts until the
/// kubelet has mounted the filled Secret): restart it as its Deployment would.
pub(super) async fn start_reference(
    controller: &mut ControllerUnderTest,
    client: &kube::Client,
    watch_client: &kube::Client,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last = String::new();
    while Instant::now() < deadline {
        if !controller.is_running() {
            if controller.starts() > 0 {
                tracing::info!("the reference operator exited while starting; restarting it");
            }
            controller.start(watch_client).await?;
        }
        match crate::webhook::effective(client).await? {
            Ok(()) => return Ok(()),
            Err(why) => last = why,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    anyhow::bail!(
        "the reference operator's webhooks did not take effect within 120 s (last: {last}); see its log {}",
        controller
            .log_path()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    )
}
