//! Waiting for components to become ready, with deadlines and helpful failures.

use std::time::{Duration, Instant};

use crate::process::Process;

#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("{name} exited ({status}) while starting; last lines of {log}:\n{tail}")]
    Exited {
        name: String,
        status: String,
        log: String,
        tail: String,
    },
    #[error(
        "{name} was not ready at {url} after {secs}s (last answer: {last}); last lines of {log}:\n{tail}"
    )]
    Timeout {
        name: String,
        url: String,
        secs: u64,
        last: String,
        log: String,
        tail: String,
    },
    #[error("http client: {0}")]
    Client(#[from] reqwest::Error),
}

/// Polls `url` until it answers 200, the process exits, or `timeout` passes.
pub async fn wait_ready(
    process: &mut Process,
    http: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<(), HealthError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = process.exited() {
            return Err(HealthError::Exited {
                name: process.name.clone(),
                status: status.to_string(),
                log: process.log.display().to_string(),
                tail: process.log_tail(20),
            });
        }
        let last = match http.get(url).timeout(Duration::from_secs(2)).send().await {
            Ok(resp) if resp.status().is_success() => return Ok(()),
            Ok(resp) => format!("HTTP {}", resp.status()),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(HealthError::Timeout {
                name: process.name.clone(),
                url: url.to_string(),
                secs: timeout.as_secs(),
                last,
                log: process.log.display().to_string(),
                tail: process.log_tail(20),
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client that trusts `ca_pem` and presents the admin identity.
pub fn admin_http(ca_pem: &str, identity_pem: &str) -> Result<reqwest::Client, HealthError> {
    Ok(reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes())?)
        .identity(reqwest::Identity::from_pem(identity_pem.as_bytes())?)
        .build()?)
}

/// For the health endpoints of components that serve an in-memory self-signed certificate.
pub fn insecure_http() -> Result<reqwest::Client, HealthError> {
    Ok(reqwest::Client::builder()
        .use_rustls_tls()
        .danger_accept_invalid_certs(true)
        .build()?)
}
