//! Serving an axum router over rustls, for the webhook server and the metrics endpoint.

mod cert_files;
mod self_signed;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::crypto::CryptoProvider;
use rustls::server::ResolvesServerCert;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

pub use cert_files::{CertError, ReloadingCert};
pub use self_signed::self_signed_localhost;

pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS server configuration presenting what `certs` resolves; HTTP/2 is offered only when
/// asked for (`controllerManager.enableHTTP2`).
pub fn server_config(
    certs: Arc<dyn ResolvesServerCert>,
    provider: Arc<CryptoProvider>,
    http2: bool,
) -> Result<rustls::ServerConfig, CertError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// Accepts TLS connections on `listener` and serves `app` on each until `stopped` turns true.
/// `what` names the server in logs.
pub async fn accept_loop(
    what: &'static str,
    listener: TcpListener,
    tls: rustls::ServerConfig,
    app: Router,
    mut stopped: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    loop {
        let (tcp, peer) = tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("{what} accept: {e}");
                    continue;
                }
            },
        };
        tokio::spawn(serve_connection(
            what,
            acceptor.clone(),
            tcp,
            peer,
            app.clone(),
            stopped.clone(),
        ));
    }
}

/// Serves one connection until the client closes it or the server stops: then it finishes
/// the request in flight and closes, so that a client's pooled connection does not keep
/// reaching a server that was stopped (or replaced by one with other settings).
async fn serve_connection(
    what: &'static str,
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    app: Router,
    mut stopped: watch::Receiver<bool>,
) {
    let tls = tokio::select! {
        () = until_stopped(&mut stopped) => return,
        accepted = acceptor.accept(tcp) => match accepted {
            Ok(tls) => tls,
            Err(e) => {
                tracing::debug!("{what} TLS handshake with {peer}: {e}");
                return;
            }
        },
    };
    let service = TowerToHyperService::new(app);
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(TokioIo::new(tls), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = until_stopped(&mut stopped) => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        tracing::debug!("{what} connection from {peer}: {e}");
    }
}

/// Returns once `stopped` turns true (or its sender is gone).
async fn until_stopped(stopped: &mut watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Checks the certificate files every `interval` and loads them when they change, until
/// `stopped` turns true.
pub async fn reload_loop(
    what: &'static str,
    certs: Arc<ReloadingCert>,
    interval: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            () = tokio::time::sleep(interval) => {}
        }
        match certs.reload_if_changed() {
            Ok(true) => tracing::info!("{what} certificate (re)loaded"),
            Ok(false) => {}
            Err(e) => tracing::debug!("{what} certificate not reloaded: {e}"),
        }
    }
}
