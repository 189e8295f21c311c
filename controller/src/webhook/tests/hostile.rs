//! Hostile requests to the served webhooks: each is answered with its status and a message,
//! the server keeps serving, and a flood of idle connections does not delay a review.

use std::time::{Duration, Instant};

use futures::future::join_all;
use rstest::rstest;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use super::*;
use crate::https::test_support::{TestCert, exchange, tls_connect};
use crate::webhook::{MUTATE_PATH, ServerOptions, VALIDATE_PATH, WebhookServer, serve};

const JSON: Option<&str> = Some("application/json");

struct Served {
    server: WebhookServer,
    cert: TestCert,
    _dir: tempfile::TempDir,
}

impl Served {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cert = TestCert::new();
        cert.write(dir.path());
        let options = ServerOptions::in_dir(dir.path(), "127.0.0.1:0".parse().unwrap());
        let server = serve(options, webhooks()).await.unwrap();
        Served {
            server,
            cert,
            _dir: dir,
        }
    }

    async fn send(&self, request: &[u8]) -> crate::https::test_support::Answer {
        exchange(&self.cert.http1(), self.server.local_addr(), request).await
    }
}

fn request(method: &str, path: &str, content_type: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(content_type) = content_type {
        head.push_str(&format!("content-type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn post(path: &str, content_type: Option<&str>, body: &[u8]) -> Vec<u8> {
    request("POST", path, content_type, body)
}

fn valid() -> Value {
    review_json("CREATE", None, &serde_json::to_value(one(pod())).unwrap())
}

/// The valid review changed by `change`, posted as JSON.
fn changed(path: &str, change: fn(&mut Value)) -> Vec<u8> {
    let mut review = valid();
    change(&mut review);
    post(path, JSON, review.to_string().as_bytes())
}

type Request = fn(&'static str) -> Vec<u8>;

#[rstest]
#[case::well_formed(|p| changed(p, |_| {}), 200, r#""allowed":true"#)]
#[case::json_with_charset(|p| post(p, Some("application/json; charset=utf-8"), valid().to_string().as_bytes()), 200, r#""allowed":true"#)]
#[case::not_json(|p| post(p, JSON, b"hello"), 400, "the body is not an AdmissionReview: expected value")]
#[case::empty_body(|p| post(p, JSON, b""), 400, "the request body is empty")]
#[case::a_json_array(|p| post(p, JSON, b"[]"), 400, "the body is not an AdmissionReview")]
#[case::trailing_garbage(|p| post(p, JSON, format!("{} {{", valid()).as_bytes()), 400, "trailing characters")]
#[case::too_deeply_nested(|p| post(p, JSON, format!(r#"{{"x": {}"#, "[".repeat(100_000)).as_bytes()), 400, "recursion limit exceeded")]
#[case::no_content_type(|p| post(p, None, valid().to_string().as_bytes()), 400, "Content-Type is missing")]
#[case::text_content_type(|p| post(p, Some("text/plain"), valid().to_string().as_bytes()), 400, r#"Content-Type is "text/plain""#)]
#[case::request_not_an_object(|p| changed(p, |r| r["request"] = json!("x")), 400, "request: invalid type")]
#[case::no_api_version(|p| changed(p, |r| { r.as_object_mut().unwrap().remove("apiVersion"); }), 400, "missing field `apiVersion`")]
#[case::v1beta1_review(|p| changed(p, |r| r["apiVersion"] = json!("admission.k8s.io/v1beta1")), 400, "expected an admission.k8s.io/v1 AdmissionReview")]
#[case::another_kind(|p| changed(p, |r| r["kind"] = json!("ConversionReview")), 400, "expected an admission.k8s.io/v1 AdmissionReview")]
#[case::no_request(|p| changed(p, |r| { r.as_object_mut().unwrap().remove("request"); }), 400, "the AdmissionReview holds no request")]
#[case::null_request(|p| changed(p, |r| r["request"] = Value::Null), 400, "the AdmissionReview holds no request")]
#[case::no_uid(|p| changed(p, |r| { r["request"].as_object_mut().unwrap().remove("uid"); }), 400, "missing field `uid`")]
#[case::empty_uid(|p| changed(p, |r| r["request"]["uid"] = json!("")), 400, "the request has no uid")]
#[case::unknown_operation(|p| changed(p, |r| r["request"]["operation"] = json!("HACK")), 400, "request.operation: unknown variant")]
#[case::object_a_pod(|p| changed(p, |r| r["request"]["object"] = pod()), 400, r#"the request's object is not a workload.codeflare.dev/v1beta2 AppWrapper: it is "v1" "Pod""#)]
#[case::object_a_string(|p| changed(p, |r| r["request"]["object"] = json!("aw")), 400, "request.object: invalid type")]
#[case::object_without_types(|p| changed(p, |r| { r["request"]["object"].as_object_mut().unwrap().remove("kind"); }), 400, "the request's object is not a workload.codeflare.dev/v1beta2 AppWrapper")]
#[case::object_with_a_bad_spec(|p| changed(p, |r| r["request"]["object"]["spec"] = json!("x")), 400, "the request's object is not a workload.codeflare.dev/v1beta2 AppWrapper: invalid type")]
#[case::old_object_a_pod(|p| changed(p, |r| { r["request"]["operation"] = json!("UPDATE"); r["request"]["oldObject"] = pod(); }), 400, "the request's oldObject is not a workload.codeflare.dev/v1beta2 AppWrapper")]
#[case::over_16_mib(|p| post(p, JSON, &vec![b' '; 17 * 1024 * 1024]), 413, "length limit exceeded")]
#[case::get(|p| request("GET", p, None, b""), 405, "")]
#[case::another_path(|_| post("/mutate-pods", JSON, valid().to_string().as_bytes()), 404, "")]
#[tokio::test]
async fn hostile_requests_get_a_status_and_a_message(
    #[values(MUTATE_PATH, VALIDATE_PATH)] path: &'static str,
    #[case] request: Request,
    #[case] status: u16,
    #[case] message: &str,
) {
    let served = Served::start().await;
    let answer = served.send(&request(path)).await;
    println!("{path}: {} {:?}", answer.status, answer.body);
    assert_eq!(answer.status, status, "{}", answer.body);
    assert!(answer.body.contains(message), "{}", answer.body);
    let after = served.send(&changed(path, |_| {})).await;
    assert_eq!(
        after.status, 200,
        "the server stopped serving: {}",
        after.body
    );
}

/// 500 TCP connections that never start TLS and 200 TLS connections that never send a
/// request, all kept open, while a review is sent: it must be answered well within the API
/// server's 10 s webhook timeout, with the production limits.
#[tokio::test]
async fn a_flood_of_idle_connections_does_not_delay_a_review() {
    // As the binary does at start; the flood and the server share this process's limit.
    crate::open_files::raise_to_hard_limit().unwrap();
    let served = Served::start().await;
    let addr = served.server.local_addr();
    let connector = served.cert.http1();
    let flooded = Instant::now();
    let mut tcp = Vec::new();
    for _ in 0..500 {
        tcp.push(TcpStream::connect(addr).await.unwrap());
    }
    let tls = join_all((0..200).map(|_| tls_connect(&connector, addr))).await;
    println!(
        "flood of {} TCP and {} TLS connections opened in {:?}",
        tcp.len(),
        tls.len(),
        flooded.elapsed()
    );
    let start = Instant::now();
    let answer = served.send(&changed(VALIDATE_PATH, |_| {})).await;
    let took = start.elapsed();
    println!(
        "a review answered {} in {took:?} during the flood",
        answer.status
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
    drop((tcp, tls));
}
