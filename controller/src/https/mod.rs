//! Serving an axum router over rustls, for the webhook server and the metrics endpoint.

mod cert_files;
mod idle;
mod request_deadline;
mod self_signed;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::crypto::CryptoProvider;
use rustls::server::ResolvesServerCert;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

pub use cert_files::{CertError, ReloadingCert};
pub use self_signed::self_signed_localhost;

/// A client must finish the TLS handshake within this (net/http bounds it by
/// `ReadHeaderTimeout`).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's headers must arrive within this from when the server starts waiting for them
/// (net/http's `ReadHeaderTimeout`). hyper starts waiting again after each answer, so a
/// kept-alive connection left idle is closed after this too; an HTTP/2 connection with no
/// request in flight for this long is closed as well.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A request's body must arrive, and its answer be made, within this; else 408.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once; more wait in the listen backlog. Each costs a task and
/// rustls' buffers, so this bounds memory, and stays well below the usual file limit.
pub const MAX_CONNECTIONS: usize = 1024;
/// How long an idle HTTP/2 connection is given to close after GOAWAY before it is dropped.
const IDLE_CLOSE_GRACE: Duration = Duration::from_secs(1);
/// How long accepting pauses after an accept error (such as running out of file descriptors),
/// rather than retrying in a busy loop.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// TLS 1.0 and 1.1 (and SSL) are refused, as by Go's `tls.Config` default `MinVersion`.
pub const TLS_VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

/// How long a client may take, and how many may be served at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub tls_handshake: Duration,
    pub header_read: Duration,
    pub request: Duration,
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            tls_handshake: TLS_HANDSHAKE_TIMEOUT,
            header_read: HEADER_READ_TIMEOUT,
            request: REQUEST_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS server configuration presenting what `certs` resolves, speaking TLS 1.2 and 1.3 only;
/// HTTP/2 is offered only when asked for (`controllerManager.enableHTTP2`).
pub fn server_config(
    certs: Arc<dyn ResolvesServerCert>,
    provider: Arc<CryptoProvider>,
    http2: bool,
) -> Result<rustls::ServerConfig, CertError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(TLS_VERSIONS)?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// Accepts TLS connections on `listener` and serves `app` on each, within `limits`, until
/// `stopped` turns true. `what` names the server in logs.
pub async fn accept_loop(
    what: &'static str,
    listener: TcpListener,
    tls: rustls::ServerConfig,
    app: Router,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(Arc::new(tls));
    let app = request_deadline::layer(app, limits.request);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let slot = tokio::select! {
            () = until_stopped(&mut stopped) => return,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            () = until_stopped(&mut stopped) => return,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("{what} accept: {e}");
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        let connection = serve_connection(
            what,
            acceptor.clone(),
            tcp,
            peer,
            app.clone(),
            limits,
            stopped.clone(),
        );
        tokio::spawn(async move {
            connection.await;
            drop(slot);
        });
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
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
) {
    let handshake = tokio::time::timeout(limits.tls_handshake, acceptor.accept(tcp));
    let tls = tokio::select! {
        () = until_stopped(&mut stopped) => return,
        accepted = handshake => match accepted {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                tracing::debug!("{what} TLS handshake with {peer}: {e}");
                return;
            }
            Err(_) => {
                tracing::debug!("{what} TLS handshake with {peer} timed out");
                return;
            }
        },
    };
    // The protocol ALPN chose, rather than the auto builder's sniffing of the first bytes,
    // which waits for them without a timeout.
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let idle = idle::Idle::new();
    let app = if h2 { idle.track(app) } else { app };
    let service = TowerToHyperService::new(app);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    let builder = if h2 {
        builder.http2_only()
    } else {
        builder.http1_only()
    };
    let connection = builder.serve_connection(TokioIo::new(tls), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = until_stopped(&mut stopped) => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
        () = idle.for_longer_than(limits.header_read), if h2 => {
            // hyper waits for the connection preface before it goes away, and a client may
            // never send one.
            connection.as_mut().graceful_shutdown();
            tokio::time::timeout(IDLE_CLOSE_GRACE, connection)
                .await
                .unwrap_or(Ok(()))
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
            () = until_stopped(&mut stopped) => return,
            () = tokio::time::sleep(interval) => {}
        }
        match certs.reload_if_changed() {
            Ok(true) => tracing::info!("{what} certificate (re)loaded"),
            Ok(false) => {}
            Err(e) => tracing::debug!("{what} certificate not reloaded: {e}"),
        }
    }
}
