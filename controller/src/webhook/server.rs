//! The HTTPS server of the two webhooks: axum routes over rustls, with the certificate files
//! polled for changes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::admission::Webhooks;
use super::decode::decode;
use crate::https::{
    CertError, Limits, ReloadingCert, accept_loop, crypto_provider, reload_loop, server_config,
};

pub const MUTATE_PATH: &str = "/mutate-workload-codeflare-dev-v1beta2-appwrapper";
pub const VALIDATE_PATH: &str = "/validate-workload-codeflare-dev-v1beta2-appwrapper";
/// Where the reference's webhook server reads `tls.crt` and `tls.key`.
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";
pub const DEFAULT_PORT: u16 = 9443;

/// An AdmissionReview holds the object twice on UPDATE; allow for large AppWrappers.
const BODY_LIMIT: usize = 16 * 1024 * 1024;

#[derive(Clone, Debug)]
pub struct ServerOptions {
    pub bind: SocketAddr,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// Offer HTTP/2 in ALPN (`controllerManager.enableHTTP2`).
    pub http2: bool,
    /// How often the certificate files are checked for changes.
    pub reload_interval: Duration,
    pub limits: Limits,
}

impl ServerOptions {
    /// `tls.crt` and `tls.key` in `dir`, served on `bind`.
    pub fn in_dir(dir: impl Into<PathBuf>, bind: SocketAddr) -> Self {
        let dir = dir.into();
        ServerOptions {
            bind,
            cert_file: dir.join("tls.crt"),
            key_file: dir.join("tls.key"),
            http2: false,
            reload_interval: Duration::from_secs(1),
            limits: Limits::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("binding the webhook server to {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(transparent)]
    Tls(#[from] CertError),
}

/// A running webhook server; it stops when [`WebhookServer::stop`] is called or it is dropped.
pub struct WebhookServer {
    local_addr: SocketAddr,
    certs: Arc<ReloadingCert>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl WebhookServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether a certificate has been loaded ("certs ready").
    pub fn certs_ready(&self) -> bool {
        self.certs.is_ready()
    }

    pub fn certs(&self) -> Arc<ReloadingCert> {
        Arc::clone(&self.certs)
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

pub fn router(webhooks: Arc<Webhooks>) -> Router {
    Router::new()
        .route(MUTATE_PATH, post(mutate))
        .route(VALIDATE_PATH, post(validate))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(webhooks)
}

async fn mutate(
    State(webhooks): State<Arc<Webhooks>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match decode(content_type(&headers), &body) {
        Ok(review) => json(&webhooks.mutate(review)),
        Err(e) => bad_request(e),
    }
}

async fn validate(
    State(webhooks): State<Arc<Webhooks>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match decode(content_type(&headers), &body) {
        Ok(review) => json(&webhooks.validate(review).await),
        Err(e) => bad_request(e),
    }
}

/// The answer as JSON, as axum's `Json` writes it (not used: its feature turns on serde_json's
/// `raw_value`, see `Cargo.toml`).
fn json(answer: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(answer) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("encoding the AdmissionReview: {e}"),
        )
            .into_response(),
    }
}

fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("not text"))
}

fn bad_request(error: impl std::fmt::Display) -> Response {
    tracing::debug!("webhook request refused: {error}");
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{error}\n"),
    )
        .into_response()
}

/// Binds and starts serving. Missing certificate files are not an error: handshakes fail until
/// they appear.
pub async fn serve(
    options: ServerOptions,
    webhooks: Webhooks,
) -> Result<WebhookServer, ServeError> {
    let provider = crypto_provider();
    let certs = Arc::new(ReloadingCert::new(
        options.cert_file.clone(),
        options.key_file.clone(),
        Arc::clone(&provider),
    ));
    if let Err(e) = certs.reload_if_changed() {
        tracing::warn!("webhook certificate not loaded yet: {e}");
    }
    let tls = server_config(certs.clone(), provider, options.http2)?;
    let listener = TcpListener::bind(options.bind)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.bind,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: options.bind,
        source,
    })?;
    let (stop, stopped) = watch::channel(false);
    let app = router(Arc::new(webhooks));
    let reloader = reload_loop(
        "webhook",
        Arc::clone(&certs),
        options.reload_interval,
        stopped.clone(),
    );
    let task = tokio::spawn(async move {
        tokio::join!(
            accept_loop("webhook", listener, tls, app, options.limits, stopped),
            reloader
        );
    });
    tracing::info!("webhook server listening on https://{local_addr}");
    Ok(WebhookServer {
        local_addr,
        certs,
        stop,
        task,
    })
}
