//! A real HTTPS server on 127.0.0.1:0 with a fresh self-signed certificate, and the raw TLS and
//! HTTP/1.1 a hostile client speaks to it.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::ResolvesServerCert;
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::{Limits, accept_loop, crypto_provider, server_config};

/// A self-signed certificate for `localhost` and `127.0.0.1`, and clients that trust it.
pub struct TestCert {
    generated: rcgen::CertifiedKey<rcgen::KeyPair>,
}

impl TestCert {
    pub fn new() -> Self {
        TestCert {
            generated: rcgen::generate_simple_self_signed(vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
            ])
            .unwrap(),
        }
    }

    fn der(&self) -> CertificateDer<'static> {
        CertificateDer::from(self.generated.cert.der().to_vec())
    }

    pub fn resolver(&self) -> Arc<dyn ResolvesServerCert> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            self.generated.signing_key.serialize_der(),
        ));
        let certified = CertifiedKey::from_der(vec![self.der()], key, &crypto_provider()).unwrap();
        Arc::new(SingleCertAndKey::from(certified))
    }

    /// `tls.crt` and `tls.key` in `dir`.
    pub fn write(&self, dir: &Path) {
        std::fs::write(dir.join("tls.crt"), self.generated.cert.pem()).unwrap();
        std::fs::write(
            dir.join("tls.key"),
            self.generated.signing_key.serialize_pem(),
        )
        .unwrap();
    }

    /// A client trusting this certificate, offering `alpn` and speaking `versions`.
    pub fn client(
        &self,
        alpn: &[&[u8]],
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der()).unwrap();
        let mut config = rustls::ClientConfig::builder_with_provider(crypto_provider())
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        TlsConnector::from(Arc::new(config))
    }

    pub fn http1(&self) -> TlsConnector {
        self.client(&[b"http/1.1"], super::TLS_VERSIONS)
    }
}

/// `app` served over TLS within `limits`; stopped when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    pub cert: TestCert,
    stop: watch::Sender<bool>,
    _task: JoinHandle<()>,
}

impl TestServer {
    pub async fn start(app: Router, limits: Limits) -> Self {
        Self::start_with(app, limits, false).await
    }

    /// With HTTP/2 offered in ALPN when `http2`.
    pub async fn start_with(app: Router, limits: Limits, http2: bool) -> Self {
        let cert = TestCert::new();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tls = server_config(cert.resolver(), crypto_provider(), http2).unwrap();
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(accept_loop("test", listener, tls, app, limits, stopped));
        TestServer {
            addr,
            cert,
            stop,
            _task: task,
        }
    }

    /// Stops the server as its owner does.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    pub async fn connect(&self) -> TlsStream<TcpStream> {
        tls_connect(&self.cert.http1(), self.addr).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

pub async fn tls_connect(connector: &TlsConnector, addr: SocketAddr) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

/// Everything the server sends until it closes the connection (a reset or a TLS close without
/// `close_notify` ends it too), and when it closed, measured from `since`; `None` when it was
/// still open after `patience`.
pub async fn read_until_closed(
    stream: &mut (impl AsyncRead + Unpin),
    since: Instant,
    patience: Duration,
) -> (Vec<u8>, Option<Duration>) {
    let mut received = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    let deadline = since + patience;
    loop {
        let read = tokio::time::timeout_at(deadline.into(), stream.read(&mut buffer)).await;
        match read {
            Err(_) => return (received, None),
            Ok(Ok(0)) | Ok(Err(_)) => return (received, Some(since.elapsed())),
            Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
        }
    }
}

/// Writes `bytes` a chunk at a time with `pause` between chunks, until done or the
/// connection fails.
pub async fn trickle(
    stream: &mut (impl AsyncWrite + Unpin),
    bytes: &[u8],
    chunk: usize,
    pause: Duration,
) {
    for piece in bytes.chunks(chunk) {
        if stream.write_all(piece).await.is_err() || stream.flush().await.is_err() {
            return;
        }
        tokio::time::sleep(pause).await;
    }
}

/// An HTTP/1.1 answer: its status and body (as text).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    /// `None` when the bytes hold no status line.
    pub fn parse(raw: &[u8]) -> Option<Answer> {
        let text = String::from_utf8_lossy(raw);
        let status = text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default();
        Some(Answer { status, body })
    }
}

/// Sends `request` (which should say `Connection: close`) while reading the answer, so that
/// an answer before the whole request was read is seen.
pub async fn exchange(connector: &TlsConnector, addr: SocketAddr, request: &[u8]) -> Answer {
    let (mut reader, mut writer) = tokio::io::split(tls_connect(connector, addr).await);
    let request = request.to_vec();
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(&request).await;
        let _ = writer.flush().await;
        writer
    });
    let (raw, closed) =
        read_until_closed(&mut reader, Instant::now(), Duration::from_secs(30)).await;
    writing.abort();
    assert!(closed.is_some(), "the server kept the connection open");
    Answer::parse(&raw).unwrap_or_else(|| panic!("no answer: {raw:?}"))
}
