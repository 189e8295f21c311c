//! Waiting helpers for integration tests on a cluster: polling against a deadline, never a
//! bare sleep. They panic with what they waited for, as test assertions do.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

use crate::poll::{self, Look};

const POLL: Duration = Duration::from_millis(200);

/// Polls `check` until it returns `Some`, or panics naming `what` after `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let found: Result<T, String> = poll::until(
        Duration::from_secs(secs),
        POLL,
        || {
            let checked = check();
            async move {
                Ok(checked
                    .await
                    .map_or_else(|| Look::NotYet(String::new()), Look::Ready))
            }
        },
        |_| format!("timed out after {secs}s waiting for {what}"),
    )
    .await;
    found.unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts that `check` holds at every poll for `secs` seconds.
pub async fn always<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        assert!(check().await, "{what} stopped holding");
        tokio::time::sleep(POLL).await;
    }
}

/// Creates the namespace unless it exists.
pub async fn namespace(client: &kube::Client, name: &str) {
    let ns = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("cannot create namespace {name}: {e}"),
    }
}

/// Runs `start` on a thread and runtime of its own and keeps what it returns alive for the
/// rest of the process, so a controller or server started once serves every test, whichever
/// test's runtime came first. Returns once `start` has finished.
pub fn keep_running<F, Fut, T>(start: F) -> Result<(), String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<T>>,
    T: 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Runtime::new() {
            Ok(runtime) => runtime,
            Err(e) => return drop(tx.send(Err(e.to_string()))),
        };
        runtime.block_on(async move {
            match start().await {
                Ok(running) => {
                    let _ = tx.send(Ok(()));
                    std::future::pending::<()>().await;
                    drop(running);
                }
                Err(e) => drop(tx.send(Err(format!("{e:#}")))),
            }
        });
    });
    rx.recv()
        .map_err(|_| "the start-up thread died".to_string())?
}

/// An API server stand-in for tests of reaching a cluster: answers every request on a
/// loopback port with a `/version` body, over plain HTTP; returns its URL.
pub async fn version_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let body = serde_json::json!({
                "major": "1", "minor": "36", "gitVersion": "v1.36.3",
                "gitCommit": "0", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.26.0", "compiler": "gc", "platform": "linux/amd64",
            })
            .to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    url
}
