//! Waiting for components to become ready, with deadlines and helpful failures.

use std::time::{Duration, Instant};

use crate::process::Process;

#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error("{0}")]
    Exited(String),
    #[error("{0}")]
    Timeout(String),
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
            return Err(HealthError::Exited(format!(
                "{} exited ({status}) while starting; last lines of {}:\n{}",
                process.name,
                process.log.display(),
                process.log_tail(20)
            )));
        }
        let last = match http.get(url).timeout(Duration::from_secs(2)).send().await {
            Ok(resp) if resp.status().is_success() => return Ok(()),
            Ok(resp) => format!("HTTP {}", resp.status()),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(HealthError::Timeout(format!(
                "{} was not ready at {url} after {}s (last answer: {last}); last lines of {}:\n{}",
                process.name,
                timeout.as_secs(),
                process.log.display(),
                process.log_tail(20)
            )));
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
