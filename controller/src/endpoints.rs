//! The plain-HTTP endpoints every replica serves: `/metrics` on the metrics address and
//! `/healthz`, `/readyz` on the health address (§7.1 step 8, §8).
//!
//! The reference serves metrics over HTTPS with TokenReview/SubjectAccessReview protection;
//! here they are plain HTTP.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::metrics::Metrics;

/// Whether the replica is ready, and why not.
pub type ReadyCheck = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, thiserror::Error)]
#[error("binding {what} to {addr}: {source}")]
pub struct BindError {
    what: &'static str,
    addr: String,
    source: std::io::Error,
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
    metrics_bind: &str,
    health_bind: &str,
    metrics: Arc<Metrics>,
    ready: ReadyCheck,
) -> Result<Endpoints, BindError> {
    let (stop, stopped) = watch::channel(false);
    let mut tasks = Vec::new();
    let metrics_router = Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(metrics);
    let health_router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(ready);
    let metrics_addr = start(
        "metrics",
        metrics_bind,
        metrics_router,
        &stopped,
        &mut tasks,
    )
    .await?;
    let health_addr = start(
        "health probes",
        health_bind,
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

async fn start(
    what: &'static str,
    bind: &str,
    router: Router,
    stopped: &watch::Receiver<bool>,
    tasks: &mut Vec<JoinHandle<()>>,
) -> Result<Option<SocketAddr>, BindError> {
    let Some(addr) = bind_address(bind) else {
        return Ok(None);
    };
    let error = |source| BindError {
        what,
        addr: addr.clone(),
        source,
    };
    let listener = TcpListener::bind(&addr).await.map_err(error)?;
    let local = listener.local_addr().map_err(error)?;
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

async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, OPENMETRICS)], metrics.encode())
}

async fn readyz(State(ready): State<ReadyCheck>) -> impl IntoResponse {
    match ready() {
        Ok(()) => (StatusCode::OK, "ok".to_owned()),
        Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, why),
    }
}

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
