//! `/metrics` served over TLS with a stand-in for the API server's reviews: who is refused,
//! with what, and that review outages fail closed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewStatus, UserInfo};
use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewStatus};
use rstest::rstest;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::metrics_server::serve;
use super::{EndpointOptions, MetricsAuth, ReviewError, Reviewer};
use crate::https::Limits;
use crate::https::test_support::{Answer, TestCert, read_until_closed, tls_connect};
use crate::metrics::Metrics;

/// Tokens: `reader` may read, `stranger` is authenticated but denied, `outage` and
/// `access-outage` meet a failing API server at the TokenReview and the SubjectAccessReview;
/// any other token is not authenticated.
struct StandIn;

impl Reviewer for StandIn {
    fn token_review(&self, review: TokenReview) -> BoxFuture<'_, Result<TokenReview, ReviewError>> {
        Box::pin(async move {
            let token = review.spec.token.clone();
            let status = match token.as_str() {
                "outage" => {
                    return Err(ReviewError(
                        "the server is currently unable to handle the request".into(),
                    ));
                }
                "reader" | "stranger" | "access-outage" => TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(UserInfo {
                        username: Some(token),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                _ => TokenReviewStatus {
                    authenticated: Some(false),
                    error: Some("invalid bearer token".into()),
                    ..Default::default()
                },
            };
            Ok(TokenReview {
                status: Some(status),
                ..review
            })
        })
    }

    fn access_review(
        &self,
        review: SubjectAccessReview,
    ) -> BoxFuture<'_, Result<SubjectAccessReview, ReviewError>> {
        Box::pin(async move {
            let user = review.spec.user.clone().unwrap_or_default();
            if user == "access-outage" {
                return Err(ReviewError("etcdserver: request timed out".into()));
            }
            let allowed = user == "reader";
            Ok(SubjectAccessReview {
                status: Some(SubjectAccessReviewStatus {
                    allowed,
                    denied: Some(!allowed),
                    reason: (!allowed).then(|| "no RBAC policy matched".to_owned()),
                    ..Default::default()
                }),
                ..review
            })
        })
    }
}

struct Served {
    addr: std::net::SocketAddr,
    cert: TestCert,
    _stop: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

async fn start() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let cert = TestCert::new();
    cert.write(dir.path());
    let options = EndpointOptions {
        metrics_bind: "127.0.0.1:0".to_owned(),
        health_bind: "0".to_owned(),
        metrics_cert_dir: dir.path().to_owned(),
        http2: false,
        limits: Limits::default(),
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = watch::channel(false);
    let auth = Arc::new(MetricsAuth::with_reviewer(StandIn));
    let (addr, _task) = serve(
        listener,
        &options,
        Arc::new(Metrics::default()),
        auth,
        stopped,
    )
    .unwrap();
    Served {
        addr,
        cert,
        _stop: stop,
        _dir: dir,
    }
}

/// Sends only `head`: a body it announces is never sent, so an answer shows the server did
/// not wait for it.
async fn send_head(served: &Served, head: &str) -> (Answer, Duration) {
    let mut tls = tls_connect(&served.cert.http1(), served.addr).await;
    tls.write_all(head.as_bytes()).await.unwrap();
    let start = Instant::now();
    let (raw, _) = read_until_closed(&mut tls, start, Duration::from_secs(10)).await;
    let answer = Answer::parse(&raw).unwrap_or_else(|| panic!("no answer: {raw:?}"));
    (answer, start.elapsed())
}

fn head(method: &str, token: Option<&str>, extra: &str) -> String {
    let authorization = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    format!(
        "{method} /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{authorization}{extra}\r\n"
    )
}

const GIB: &str = "content-length: 1073741824\r\n";
const CHUNKED: &str = "transfer-encoding: chunked\r\n";

#[rstest]
#[case::no_token("GET", None, "", 401, "Unauthorized")]
#[case::invalid_token("GET", Some("forged"), "", 401, "Unauthorized")]
#[case::denied(
    "GET",
    Some("stranger"),
    "",
    403,
    "Authorization denied for user stranger"
)]
#[case::token_review_outage("GET", Some("outage"), "", 500, "Authentication failed")]
#[case::access_review_outage(
    "GET",
    Some("access-outage"),
    "",
    500,
    "Authorization for user access-outage failed"
)]
#[case::allowed("GET", Some("reader"), "", 200, "# EOF")]
#[case::allowed_with_an_empty_body("GET", Some("reader"), "content-length: 0\r\n", 200, "# EOF")]
#[case::post("POST", Some("reader"), "", 405, "")]
#[case::post_of_a_gib(
    "POST",
    Some("reader"),
    GIB,
    413,
    "the metrics endpoint takes no request body"
)]
#[case::get_with_a_gib(
    "GET",
    Some("reader"),
    GIB,
    413,
    "the metrics endpoint takes no request body"
)]
#[case::get_chunked(
    "GET",
    Some("reader"),
    CHUNKED,
    413,
    "the metrics endpoint takes no request body"
)]
#[case::anonymous_post_of_a_gib(
    "POST",
    None,
    GIB,
    413,
    "the metrics endpoint takes no request body"
)]
#[tokio::test]
async fn metrics_refusals(
    #[case] method: &str,
    #[case] token: Option<&str>,
    #[case] extra: &str,
    #[case] status: u16,
    #[case] message: &str,
) {
    let served = start().await;
    let (answer, took) = send_head(&served, &head(method, token, extra)).await;
    println!(
        "{method} {token:?} {extra:?}: {} {:?} after {took:?}",
        answer.status,
        answer.body.lines().next()
    );
    assert_eq!(answer.status, status, "{}", answer.body);
    assert!(answer.body.contains(message), "{}", answer.body);
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
}
