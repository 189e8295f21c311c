//! The endpoints every replica serves (§7.1 step 8, §8.3): `/metrics` over HTTPS for
//! authenticated and authorized readers on the metrics address, and `/healthz`, `/readyz` over
//! plain HTTP on the health address.

mod metrics_auth;
mod metrics_server;
mod reviews;
mod ttl_cache;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use metrics_auth::{Authentication, Authorization, Refusal, bearer_token};
pub use metrics_server::default_metrics_cert_dir;
pub use reviews::{MetricsAuth, ReviewError, Reviewer};

use crate::https::{CertError, Limits};
use crate::metrics::Metrics;

/// Whether the replica is ready, and why not.
pub type ReadyCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("binding {what} to {addr}: {source}")]
    Bind {
        what: &'static str,
        addr: String,
        source: std::io::Error,
    },
    #[error("the metrics certificate: {0}")]
    Certificate(#[from] CertError),
}

/// Where and how the endpoints are served.
#[derive(Clone, Debug)]
pub struct EndpointOptions {
    /// `controllerManager.metrics.bindAddress`.
    pub metrics_bind: String,
    /// `controllerManager.health.bindAddress`.
    pub health_bind: String,
    /// Where a metrics certificate (`tls.crt`, `tls.key`) is read from when both files are
    /// there at start; otherwise a self-signed one is made.
    pub metrics_cert_dir: PathBuf,
    /// `controllerManager.enableHTTP2`.
    pub http2: bool,
    pub limits: Limits,
}

/// A controller-runtime bind address as a socket address string: `"0"` (and `""`) disable the
/// endpoint, `":8081"` means every interface.
pub fn bind_address(value: &str) -> Option<String> {
    match value.trim() {
        "" | "0" => None,
        v if v.starts_with(':') => Some(format!("0.0.0.0{v}")),
        v => Some(v.to_owned()),
    }
}

/// The running endpoints; they stop when this is dropped or [`Endpoints::stop`] is called.
pub struct Endpoints {
    pub metrics_addr: Option<SocketAddr>,
    pub health_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Endpoints {
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

pub async fn serve_endpoints(
    options: &EndpointOptions,
    metrics: Arc<Metrics>,
    auth: Arc<MetricsAuth>,
    ready: ReadyCheck,
) -> Result<Endpoints, EndpointError> {
    let (stop, stopped) = watch::channel(false);
    let mut tasks = Vec::new();
    let health_router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready);
    let metrics_addr = match bind_address(&options.metrics_bind) {
        Some(addr) => {
            let listener = listen("metrics", &addr).await?;
            let (local, task) =
                metrics_server::serve(listener, options, metrics, auth, stopped.clone())?;
            tasks.push(task);
            Some(local)
        }
        None => None,
    };
    let health_addr = start(
        "health probes",
        &options.health_bind,
        health_router,
        &stopped,
        &mut tasks,
    )
    .await?;
    Ok(Endpoints {
        metrics_addr,
        health_addr,
        stop,
        tasks,
    })
}

async fn listen(what: &'static str, addr: &str) -> Result<TcpListener, EndpointError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| EndpointError::Bind {
            what,
            addr: addr.to_owned(),
            source,
        })
}

async fn start(
    what: &'static str,
    bind: &str,
    router: Router,
    stopped: &watch::Receiver<bool>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<Option<SocketAddr>, EndpointError> {
    let Some(addr) = bind_address(bind) else {
        return Ok(None);
    };
    let listener = listen(what, &addr).await?;
    let local = listener
        .local_addr()
        .map_err(|source| EndpointError::Bind {
            what,
            addr: addr.clone(),
            source,
        })?;
    let mut stopped = stopped.clone();
    let shutdown = async move {
        let _ = stopped.wait_for(|s| *s).await;
    };
    tasks.push(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!("{what} server: {e}");
        }
    }));
    tracing::info!("serving {what} on http://{local}");
    Ok(Some(local))
}

async fn readyz(State(ready): State<ReadyCheck>) -> impl IntoResponse {
    match ready() {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, why),
    }
}

#[cfg(test)]
mod served_tests;

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::bind_address;

    #[rstest]
    #[case::all_interfaces(":8443", Some("0.0.0.0:8443"))]
    #[case::disabled("0", None)]
    #[case::empty("", None)]
    #[case::host_and_port("localhost:0", Some("localhost:0"))]
    #[case::ip("127.0.0.1:8081", Some("127.0.0.1:8081"))]
    fn reads_controller_runtime_bind_addresses(
        #[case] value: &str,
        #[case] expected: Option<&str>,
    ) {
        assert_eq!(bind_address(value).as_deref(), expected);
    }
}
