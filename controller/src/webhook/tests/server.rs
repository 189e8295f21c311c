//! The HTTPS server of the webhooks: both paths served over TLS, large reviews accepted, and
//! nothing served once stopped.

use serde_json::{Value, json};

use super::*;
use crate::https::test_support::TestCert;
use crate::webhook::{MUTATE_PATH, ServerOptions, VALIDATE_PATH, WebhookServer, serve};

/// Serves from `dir`, with a self-signed `tls.crt`/`tls.key` written there when `certs`.
async fn start(dir: &std::path::Path, certs: bool) -> WebhookServer {
    if certs {
        TestCert::new().write(dir);
    }
    serve(
        ServerOptions::in_dir(dir, "127.0.0.1:0".parse().unwrap()),
        webhooks(),
    )
    .await
    .unwrap()
}

async fn post(server: &WebhookServer, path: &str, body: &Value) -> reqwest::Result<Value> {
    let client = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()?;
    let url = format!("https://127.0.0.1:{}{path}", server.local_addr().port());
    client
        .post(url)
        .json(body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await
}

#[tokio::test]
async fn both_webhooks_are_served_over_tls_until_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), true).await;
    assert!(server.certs_ready());
    let aw = serde_json::to_value(one(pod())).unwrap();

    let mutated = post(&server, MUTATE_PATH, &review_json("CREATE", None, &aw))
        .await
        .unwrap();
    assert_eq!(mutated["response"]["allowed"], true);
    assert_eq!(mutated["response"]["patchType"], "JSONPatch");

    // An UPDATE review holds the object twice; AppWrappers near the API server's object size
    // limit (about 1.5 MiB) must still be answered.
    let mut big = aw.clone();
    big["metadata"]["annotations"] = json!({"big": "x".repeat(1536 * 1024)});
    let validated = post(
        &server,
        VALIDATE_PATH,
        &review_json("UPDATE", Some(&big), &big),
    )
    .await
    .unwrap();
    assert_eq!(validated["response"]["allowed"], true);

    // Once stop returns the listener is closed: checked without yielding to the runtime, so
    // that a server merely dropped (and stopping later) is caught.
    let addr = server.local_addr();
    server.stop().await;
    let refused = std::net::TcpStream::connect(addr);
    assert!(refused.is_err(), "still listening after stop");
}

#[tokio::test]
async fn certs_are_not_ready_until_the_files_exist() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), false).await;
    assert!(!server.certs_ready());
    server.stop().await;
}
