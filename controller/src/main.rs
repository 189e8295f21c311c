use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use appwrapper_controller::certs::{NOT_READY, Readiness, Rotator, Settings};
use appwrapper_controller::config::Config;
use appwrapper_controller::config::config_map;
use appwrapper_controller::control_loop::run_selected;
use appwrapper_controller::endpoints::{
    EndpointOptions, MetricsAuth, ReadyCheck, bind_address, default_metrics_cert_dir,
    serve_endpoints,
};
use appwrapper_controller::https::Limits;
use appwrapper_controller::metrics::Metrics;
use appwrapper_controller::namespace::operator_namespace;
use appwrapper_controller::webhook::{
    DEFAULT_CERT_DIR, ServerOptions, WebhookServer, Webhooks, serve,
};
use clap::Parser;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tracing_subscriber::EnvFilter;

/// What this binary calls itself in its API requests.
const USER_AGENT: &str = concat!("appwrapper-controller/", env!("CARGO_PKG_VERSION"));

/// The AppWrapper (workload.codeflare.dev/v1beta2) controller.
#[derive(Parser, Debug)]
#[command(name = "appwrapper-controller", version)]
struct Args {
    /// Kubeconfig file; otherwise KUBECONFIG, the in-cluster config or ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The ConfigMap in the operator's namespace that holds the configuration; it is created
    /// with the defaults when missing.
    #[arg(long, value_name = "CONFIGMAP", default_value = config_map::DEFAULT_NAME)]
    config: String,
    /// Read the configuration from this file (the ConfigMap's format, laid over the defaults in
    /// the same way) instead of the ConfigMap.
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    config_file: Option<PathBuf>,
    /// Log level: a level name or a zap verbosity integer (0 = info, higher = more verbose).
    #[arg(long, default_value = "info")]
    zap_log_level: String,
    /// Directory the webhook server reads tls.crt and tls.key from (where the Secret is
    /// mounted). With `certManagement.namespace` empty (out of cluster, no NAMESPACE) the
    /// certificate there is served as it is and no Secret is managed.
    #[arg(long, default_value = DEFAULT_CERT_DIR)]
    webhook_cert_dir: PathBuf,
    /// Directory of the metrics server's certificate (tls.crt and tls.key); when they are not
    /// both there at start, a self-signed certificate is used. Default:
    /// $TMPDIR/k8s-metrics-server/serving-certs, as controller-runtime's.
    #[arg(long)]
    metrics_cert_dir: Option<PathBuf>,
    /// Address of the webhook server (HTTPS).
    #[arg(long, default_value = ":9443")]
    webhook_bind_address: String,
    /// Reconcile only the AppWrappers that match this label selector (e.g. `shard=a` or
    /// `!shard`), so that several controllers can share a cluster. Default: all of them.
    #[arg(long, value_name = "SELECTOR")]
    appwrapper_selector: Option<String>,
}

enum ConfigSource {
    /// Read from `--config-file` before connecting, so that a bad file stops the binary at once.
    File(Box<Config>),
    ConfigMap {
        namespace: String,
    },
}

fn config_source(args: &Args) -> anyhow::Result<ConfigSource> {
    let namespace = operator_namespace();
    match (&args.config_file, namespace) {
        (Some(path), namespace) => {
            let defaults = Config::defaults_in(namespace.as_deref().unwrap_or_default());
            Ok(ConfigSource::File(Box::new(defaults.overlaid_file(path)?)))
        }
        (None, Some(namespace)) => Ok(ConfigSource::ConfigMap { namespace }),
        (None, None) => anyhow::bail!(
            "unable to determine the operator namespace, where ConfigMap {} is: set NAMESPACE or run in a pod",
            args.config
        ),
    }
}

fn log_filter(level: &str) -> String {
    match level.parse::<i32>() {
        Ok(n) if n >= 1 => "info,appwrapper_controller=debug".to_owned(),
        Ok(_) => "info".to_owned(),
        Err(_) => level.to_owned(),
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot listen for SIGTERM: {e}");
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(log_filter(&args.zap_log_level)));
    // The fmt subscriber writes to stdout; colours only on a terminal, not in log files.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stdout().is_terminal())
        .init();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "starting appwrapper-controller"
    );
    match appwrapper_controller::open_files::raise_to_hard_limit() {
        Ok(limit) => tracing::debug!(?limit, "open files"),
        Err(e) => tracing::warn!("could not raise the limit of open files: {e}"),
    }

    let source = config_source(&args)?;
    let mut kube_config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let options = KubeConfigOptions::default();
            kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?
        }
        None => kube::Config::infer().await?,
    };
    // kube-rs sends no User-Agent; client-go sends one, and audit logs and API priority
    // tell clients apart by it.
    kube_config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    let client = Client::try_from(kube_config)?;
    let config = match source {
        ConfigSource::File(config) => *config,
        ConfigSource::ConfigMap { namespace } => {
            let defaults = Config::defaults_in(&namespace);
            config_map::load_or_create(&client, &namespace, &args.config, &defaults).await?
        }
    };
    tracing::info!(config = %serde_json::to_string(&config)?, "configuration");

    let webhooks = if config.webhooks_enabled {
        Some(start_webhooks(&args, &config, client.clone()).await?)
    } else {
        None
    };
    let ready: ReadyCheck = match &webhooks {
        Some(webhooks) => webhooks.ready_check(),
        None => Arc::new(|| Ok(())),
    };
    let metrics = Arc::new(Metrics::default());
    let manager = &config.controller_manager;
    let options = EndpointOptions {
        metrics_bind: manager.metrics.bind_address.clone(),
        health_bind: manager.health.bind_address.clone(),
        metrics_cert_dir: args
            .metrics_cert_dir
            .clone()
            .unwrap_or_else(default_metrics_cert_dir),
        http2: manager.enable_http2,
        limits: Limits::default(),
    };
    let auth = Arc::new(MetricsAuth::new(client.clone()));
    let _endpoints =
        serve_endpoints(&options, Arc::clone(&metrics), auth, Arc::clone(&ready)).await?;

    if webhooks.is_some() {
        tokio::select! {
            () = certs_ready(&ready) => {}
            () = shutdown_signal() => return Ok(()),
        }
    }
    let mut handle =
        run_selected(config, client, metrics, args.appwrapper_selector.clone()).await?;
    tokio::select! {
        result = &mut handle => result,
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            handle.shutdown().await
        }
    }
}

/// The webhook server and, when this replica manages its certificate, the rotator.
struct WebhookSide {
    server: WebhookServer,
    _rotator: Option<Rotator>,
    managed: Option<Arc<Readiness>>,
}

impl WebhookSide {
    /// Not ready until the managed certificate is mounted and its CA injected, then until the
    /// webhook server has loaded a certificate.
    fn ready_check(&self) -> ReadyCheck {
        let managed = self.managed.clone();
        let loaded = self.server.certs();
        Arc::new(move || {
            if let Some(managed) = &managed {
                managed.check()?;
            }
            if loaded.is_ready() {
                Ok(())
            } else {
                Err(format!(
                    "{NOT_READY}: the webhook server has no certificate yet"
                ))
            }
        })
    }
}

async fn start_webhooks(
    args: &Args,
    config: &Config,
    client: Client,
) -> anyhow::Result<WebhookSide> {
    let certs = &config.cert_management;
    let (rotator, managed) = if certs.namespace.is_empty() {
        tracing::warn!(
            dir = %args.webhook_cert_dir.display(),
            "certManagement.namespace is empty: serving the certificate in the directory as it is"
        );
        (None, None)
    } else {
        let rotator = Rotator::start(client.clone(), Settings::from_config(certs));
        let readiness = Readiness::new(rotator.established(), &certs.certificate_dir);
        (Some(rotator), Some(Arc::new(readiness)))
    };
    let server = serve_webhooks(args, config, client).await?;
    Ok(WebhookSide {
        server,
        _rotator: rotator,
        managed,
    })
}

async fn serve_webhooks(
    args: &Args,
    config: &Config,
    client: Client,
) -> anyhow::Result<WebhookServer> {
    let bind = bind_address(&args.webhook_bind_address).context(
        "the webhook server cannot be disabled by its address; set webhooksEnabled: false",
    )?;
    let bind: SocketAddr = tokio::net::lookup_host(&bind)
        .await
        .with_context(|| format!("resolving the webhook address {bind}"))?
        .next()
        .with_context(|| format!("the webhook address {bind} resolves to nothing"))?;
    let mut options = ServerOptions::in_dir(&args.webhook_cert_dir, bind);
    options.http2 = config.controller_manager.enable_http2;
    Ok(serve(options, Webhooks::new(config, client)).await?)
}

/// Controllers start only once the webhook certificate is ready (§7.1 step 7).
async fn certs_ready(ready: &ReadyCheck) {
    if let Err(why) = ready() {
        tracing::info!("waiting for the webhook certificate: {why}");
    }
    while ready().is_err() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tracing::info!("certs ready");
}
