//! `/metrics` as controller-runtime's secure metrics server serves it: HTTPS, the certificate
//! from its directory when there is one and otherwise self-signed, every request
//! authenticated and authorized first. Only GET is answered, and a request that comes with a
//! body is refused before it is read.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::HttpBody as _;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rustls::server::ResolvesServerCert;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::reviews::MetricsAuth;
use super::{EndpointError, EndpointOptions};
use crate::https::{
    ReloadingCert, accept_loop, crypto_provider, reload_loop, self_signed_localhost, server_config,
};
use crate::metrics::Metrics;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// controller-runtime's default metrics certificate directory.
pub fn default_metrics_cert_dir() -> PathBuf {
    std::env::temp_dir()
        .join("k8s-metrics-server")
        .join("serving-certs")
}

pub fn serve(
    listener: TcpListener,
    options: &EndpointOptions,
    metrics: Arc<Metrics>,
    auth: Arc<MetricsAuth>,
    stopped: watch::Receiver<bool>,
) -> Result<(SocketAddr, JoinHandle<()>), EndpointError> {
    let local = listener
        .local_addr()
        .map_err(|source| EndpointError::Bind {
            what: "metrics",
            addr: options.metrics_bind.clone(),
            source,
        })?;
    let provider = crypto_provider();
    let cert_file = options.metrics_cert_dir.join("tls.crt");
    let key_file = options.metrics_cert_dir.join("tls.key");
    let (certs, reloading): (Arc<dyn ResolvesServerCert>, _) =
        if cert_file.exists() && key_file.exists() {
            let files = Arc::new(ReloadingCert::new(
                cert_file,
                key_file,
                Arc::clone(&provider),
            ));
            files.reload_if_changed()?;
            (files.clone(), Some(files))
        } else {
            (self_signed_localhost(&provider)?, None)
        };
    let tls = server_config(certs, provider, options.http2)?;
    let app = Router::new()
        .route("/metrics", get(serve_metrics))
        .with_state(metrics)
        .layer(middleware::from_fn_with_state(auth, authenticate))
        .layer(middleware::from_fn(refuse_a_body));
    let accept = accept_loop(
        "metrics",
        listener,
        tls,
        app,
        options.limits,
        stopped.clone(),
    );
    let reloader = async move {
        if let Some(files) = reloading {
            reload_loop("metrics", files, Duration::from_secs(1), stopped).await;
        }
    };
    let task = tokio::spawn(async move {
        tokio::join!(accept, reloader);
    });
    tracing::info!("serving metrics on https://{local}/metrics");
    Ok((local, task))
}

/// A body that is not known to be empty (a `Content-Length` above 0, or chunked) is refused
/// without reading it, before its sender costs the API server a review.
async fn refuse_a_body(request: Request, next: Next) -> Response {
    if request.body().size_hint().upper() == Some(0) {
        return next.run(request).await;
    }
    plain_text(
        StatusCode::PAYLOAD_TOO_LARGE,
        "the metrics endpoint takes no request body",
    )
}

async fn authenticate(
    State(auth): State<Arc<MetricsAuth>>,
    request: Request,
    next: Next,
) -> Response {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    match auth
        .check(header, request.method().as_str(), request.uri().path())
        .await
    {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let status =
                StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            plain_text(status, &refusal.message)
        }
    }
}

/// As Go's `http.Error` writes it.
fn plain_text(status: StatusCode, message: &str) -> Response {
    let mut response = (status, format!("{message}\n")).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

async fn serve_metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, OPENMETRICS)], metrics.encode())
}
