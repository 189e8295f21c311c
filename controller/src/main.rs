use std::path::PathBuf;

use anyhow::Context as _;
use appwrapper_controller::config::Config;
use appwrapper_controller::run::run;
use clap::Parser;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tracing_subscriber::EnvFilter;

/// The AppWrapper (workload.codeflare.dev/v1beta2) controller.
#[derive(Parser, Debug)]
#[command(name = "appwrapper-controller", version)]
struct Args {
    /// Kubeconfig file; otherwise KUBECONFIG, the in-cluster config or ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Configuration file (YAML, the operator config format); defaults apply without it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Log level: a level name or a zap verbosity integer (0 = info, higher = more verbose).
    #[arg(long, default_value = "info")]
    zap_log_level: String,
}

fn log_filter(level: &str) -> String {
    match level.parse::<i32>() {
        Ok(n) if n >= 1 => "debug".to_owned(),
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
    tracing_subscriber::fmt().with_env_filter(filter).init();
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "starting appwrapper-controller"
    );

    let config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let client = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let options = KubeConfigOptions::default();
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?;
            Client::try_from(config)?
        }
        None => Client::try_default().await?,
    };

    let mut handle = run(config, client).await?;
    tokio::select! {
        result = &mut handle => result,
        _ = shutdown_signal() => {
            tracing::info!("shutting down");
            handle.shutdown().await
        }
    }
}
