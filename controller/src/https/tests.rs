//! Hostile clients against a real server: slow or silent ones are disconnected after the
//! limits, TLS below 1.2 gets an alert, and the connection limit holds.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing::{get, post};
use rstest::rstest;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::test_support::{Answer, TestServer, exchange, read_until_closed, tls_connect, trickle};
use super::{Limits, TLS_VERSIONS};

const SHORT: Limits = Limits {
    tls_handshake: Duration::from_millis(500),
    header_read: Duration::from_millis(700),
    request: Duration::from_millis(1000),
    max_connections: 64,
};

/// How much later than its limit a connection may be closed (the machine may be busy).
const SLACK: Duration = Duration::from_millis(2000);

fn app() -> Router {
    Router::new().route("/", get(|| async { "ok" })).route(
        "/echo",
        post(|body: Bytes| async move { body.len().to_string() }),
    )
}

#[derive(Debug, Clone, Copy)]
enum Client {
    /// Opens TCP and sends nothing.
    TcpOnly,
    /// Sends the first bytes of a TLS record, then nothing.
    PartialHello,
    /// Finishes the handshake, then sends nothing.
    IdleTls,
    /// Sends a request's headers a byte every 20 ms.
    SlowHeaders,
    /// Sends its headers, then its body a byte every 20 ms.
    SlowBody,
    /// Gets an answer, then keeps the connection open without a second request.
    IdleKeepAlive,
}

const SLOW_PAUSE: Duration = Duration::from_millis(20);

/// What the server sent before it closed, and how long after the client's behaviour began.
async fn behave(server: &TestServer, client: Client) -> (Vec<u8>, Option<Duration>) {
    let patience = Duration::from_secs(10);
    match client {
        Client::TcpOnly | Client::PartialHello => {
            let mut tcp = TcpStream::connect(server.addr).await.unwrap();
            let start = Instant::now();
            if let Client::PartialHello = client {
                tcp.write_all(&[0x16, 0x03, 0x01, 0x01, 0x00])
                    .await
                    .unwrap();
            }
            read_until_closed(&mut tcp, start, patience).await
        }
        Client::IdleTls => {
            let mut tls = server.connect().await;
            read_until_closed(&mut tls, Instant::now(), patience).await
        }
        Client::SlowHeaders | Client::SlowBody | Client::IdleKeepAlive => {
            let tls = server.connect().await;
            let start = Instant::now();
            let (mut reader, mut writer) = tokio::io::split(tls);
            let writing = tokio::spawn(async move {
                match client {
                    Client::SlowHeaders => {
                        let headers = format!(
                            "POST /echo HTTP/1.1\r\nhost: x\r\nx-slow: {}\r\n\r\n",
                            "a".repeat(1000)
                        );
                        trickle(&mut writer, headers.as_bytes(), 1, SLOW_PAUSE).await;
                    }
                    Client::SlowBody => {
                        let head = "POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n";
                        writer.write_all(head.as_bytes()).await.unwrap();
                        trickle(&mut writer, &[b'x'; 1000], 1, SLOW_PAUSE).await;
                    }
                    _ => {
                        writer
                            .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                            .await
                            .unwrap();
                        tokio::time::sleep(patience).await;
                    }
                }
                writer
            });
            let closed = read_until_closed(&mut reader, start, patience).await;
            writing.abort();
            closed
        }
    }
}

#[rstest]
#[case::tcp_only(Client::TcpOnly, SHORT.tls_handshake, None)]
#[case::partial_client_hello(Client::PartialHello, SHORT.tls_handshake, None)]
#[case::idle_after_the_handshake(Client::IdleTls, SHORT.header_read, None)]
#[case::slowloris_headers(Client::SlowHeaders, SHORT.header_read, None)]
#[case::slow_body(Client::SlowBody, SHORT.request, Some(408))]
#[case::idle_keep_alive(Client::IdleKeepAlive, SHORT.header_read, Some(200))]
#[tokio::test]
async fn slow_clients_are_disconnected_after_their_limit(
    #[case] client: Client,
    #[case] limit: Duration,
    #[case] answer: Option<u16>,
) {
    let server = TestServer::start(app(), SHORT).await;
    let (received, closed) = behave(&server, client).await;
    let closed = closed.unwrap_or_else(|| panic!("{client:?} still connected after 10 s"));
    println!(
        "{client:?}: disconnected after {closed:?}, sent {:?}",
        String::from_utf8_lossy(&received)
    );
    assert!(
        closed + Duration::from_millis(50) >= limit && closed <= limit + SLACK,
        "{client:?} disconnected after {closed:?}, the limit is {limit:?}"
    );
    assert_eq!(Answer::parse(&received).map(|a| a.status), answer);
    // The server still serves.
    let ok = exchange(
        &server.cert.http1(),
        server.addr,
        b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    assert_eq!((ok.status, &*ok.body), (200, "ok"));
}

#[test]
fn only_tls_1_2_and_1_3_are_enabled() {
    let versions: Vec<_> = TLS_VERSIONS.iter().map(|v| v.version).collect();
    assert_eq!(
        versions,
        [
            rustls::ProtocolVersion::TLSv1_3,
            rustls::ProtocolVersion::TLSv1_2
        ]
    );
}

#[rstest]
#[case::tls_1_2(&rustls::version::TLS12)]
#[case::tls_1_3(&rustls::version::TLS13)]
#[tokio::test]
async fn tls_1_2_and_1_3_clients_are_served(
    #[case] version: &'static rustls::SupportedProtocolVersion,
) {
    let server = TestServer::start(app(), SHORT).await;
    let connector = server.cert.client(&[b"http/1.1"], &[version]);
    let mut tls = tls_connect(&connector, server.addr).await;
    assert_eq!(tls.get_ref().1.protocol_version(), Some(version.version));
    tls.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let (raw, _) = read_until_closed(&mut tls, Instant::now(), Duration::from_secs(5)).await;
    assert_eq!(Answer::parse(&raw).map(|a| a.status), Some(200));
}

/// A ClientHello as an SSL 3.0 / TLS 1.0 / TLS 1.1 client sends it: `version` as
/// `client_version` and no `supported_versions` extension; with `signature_algorithms` when
/// `sig_algs` (a TLS 1.2 extension that rustls requires before it looks at the version).
fn legacy_client_hello(version: u16, sig_algs: bool) -> Vec<u8> {
    let suites: [u16; 4] = [0xc02f, 0xc013, 0x002f, 0x0035];
    let mut hello = version.to_be_bytes().to_vec();
    hello.extend([7u8; 32]);
    hello.push(0);
    hello.extend((suites.len() as u16 * 2).to_be_bytes());
    suites.iter().for_each(|s| hello.extend(s.to_be_bytes()));
    hello.extend([1, 0]);
    if sig_algs {
        let schemes: [u16; 3] = [0x0804, 0x0403, 0x0401];
        let mut extension = 0x000du16.to_be_bytes().to_vec();
        extension.extend((schemes.len() as u16 * 2 + 2).to_be_bytes());
        extension.extend((schemes.len() as u16 * 2).to_be_bytes());
        schemes
            .iter()
            .for_each(|s| extension.extend(s.to_be_bytes()));
        hello.extend((extension.len() as u16).to_be_bytes());
        hello.extend(extension);
    }
    let mut handshake = vec![1u8];
    handshake.extend(&(hello.len() as u32).to_be_bytes()[1..]);
    handshake.extend(hello);
    let mut record = vec![0x16];
    record.extend(version.min(0x0301).to_be_bytes());
    record.extend((handshake.len() as u16).to_be_bytes());
    record.extend(handshake);
    record
}

const ALERT: u8 = 0x15;
const HANDSHAKE_FAILURE: u8 = 40;
const PROTOCOL_VERSION: u8 = 70;

#[rstest]
#[case::ssl_3_0(0x0300, false, HANDSHAKE_FAILURE)]
#[case::tls_1_0(0x0301, false, HANDSHAKE_FAILURE)]
#[case::tls_1_1(0x0302, false, HANDSHAKE_FAILURE)]
#[case::ssl_3_0_with_signature_algorithms(0x0300, true, PROTOCOL_VERSION)]
#[case::tls_1_0_with_signature_algorithms(0x0301, true, PROTOCOL_VERSION)]
#[case::tls_1_1_with_signature_algorithms(0x0302, true, PROTOCOL_VERSION)]
#[tokio::test]
async fn a_legacy_client_hello_gets_an_alert_not_a_server_hello(
    #[case] version: u16,
    #[case] sig_algs: bool,
    #[case] alert: u8,
) {
    let server = TestServer::start(app(), SHORT).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    tcp.write_all(&legacy_client_hello(version, sig_algs))
        .await
        .unwrap();
    let start = Instant::now();
    let (received, closed) = read_until_closed(&mut tcp, start, Duration::from_secs(5)).await;
    println!(
        "ClientHello {version:#06x} (signature_algorithms: {sig_algs}): {received:02x?}, closed after {closed:?}"
    );
    assert!(closed.is_some(), "the connection stayed open");
    // One fatal alert record (type, version, length, level, description) and nothing else.
    assert_eq!(received.len(), 7, "{received:02x?}");
    assert_eq!(
        (received[0], received[5], received[6]),
        (ALERT, 2, alert),
        "{received:02x?}"
    );
}

/// Once every connection slot is held by a silent client, the next client waits in the
/// backlog until the handshake limit frees a slot, and is then served.
#[tokio::test]
async fn the_connection_limit_holds_and_timeouts_free_slots() {
    let limits = Limits {
        max_connections: 4,
        ..SHORT
    };
    let server = TestServer::start(app(), limits).await;
    let start = Instant::now();
    let mut silent = Vec::new();
    for _ in 0..limits.max_connections {
        silent.push(TcpStream::connect(server.addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ok = exchange(
        &server.cert.http1(),
        server.addr,
        b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
    )
    .await;
    let waited = start.elapsed();
    println!("served after {waited:?} with every slot taken");
    assert_eq!(ok.status, 200);
    assert!(
        waited >= limits.tls_handshake && waited <= limits.tls_handshake + SLACK,
        "served after {waited:?}"
    );
}

/// With HTTP/2 enabled, a client that negotiates h2 and then sends nothing (not even the
/// connection preface) is disconnected too: after the header limit, and a grace for GOAWAY.
#[tokio::test]
async fn an_idle_http2_connection_is_disconnected() {
    let server = TestServer::start_with(app(), SHORT, true).await;
    let connector = server.cert.client(&[b"h2"], TLS_VERSIONS);
    let mut tls = tls_connect(&connector, server.addr).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (_, closed) = read_until_closed(&mut tls, Instant::now(), Duration::from_secs(5)).await;
    println!("idle h2: disconnected after {closed:?}");
    let closed = closed.expect("still connected after 5 s");
    let limit = SHORT.header_read + super::IDLE_CLOSE_GRACE;
    assert!(
        closed + Duration::from_millis(50) >= SHORT.header_read && closed <= limit + SLACK,
        "disconnected after {closed:?}"
    );
}

/// A client's pooled connection must not keep reaching a server that was stopped (the API
/// server would go on talking to a webhook server replaced by one with other settings).
#[tokio::test]
async fn stopping_the_server_closes_its_open_connections() {
    let patient = Limits {
        header_read: Duration::from_secs(30),
        request: Duration::from_secs(30),
        ..SHORT
    };
    let server = TestServer::start(app(), patient).await;
    let mut idle = server.connect().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stopped = Instant::now();
    server.stop();
    let (_, closed) = read_until_closed(&mut idle, stopped, Duration::from_secs(10)).await;
    let closed = closed.expect("the connection stayed open after the server stopped");
    assert!(closed < SLACK, "closed {closed:?} after the stop");
}
