//! Waiting for components to become ready, with deadlines and helpful failures.

use std::sync::Mutex;
use std::time::Duration;

use crate::poll::{self, Look};
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

fn exited(process: &mut Process) -> Result<(), HealthError> {
    match process.exited() {
        Some(status) => Err(HealthError::Exited(format!(
            "{} exited ({status}) while starting; last lines of {}:\n{}",
            process.name,
            process.log.display(),
            process.log_tail(20)
        ))),
        None => Ok(()),
    }
}

/// Polls `url` until it answers 200, the process exits, or `timeout` passes.
pub async fn wait_ready(
    process: &mut Process,
    http: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<(), HealthError> {
    let (name, log) = (process.name.clone(), process.log.clone());
    let process = Mutex::new(process);
    let process = &process;
    poll::until(
        timeout,
        Duration::from_millis(100),
        move || async move {
            exited(&mut process.lock().unwrap_or_else(|e| e.into_inner()))?;
            Ok(match http.get(url).timeout(Duration::from_secs(2)).send().await {
                Ok(resp) if resp.status().is_success() => Look::Ready(()),
                Ok(resp) => Look::NotYet(format!("HTTP {}", resp.status())),
                Err(e) => Look::NotYet(e.to_string()),
            })
        },
        |last| {
            HealthError::Timeout(format!(
                "{name} was not ready at {url} after {}s (last answer: {last}); last lines of {}:\n{}",
                timeout.as_secs(),
                log.display(),
                process
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .log_tail(20)
            ))
        },
    )
    .await
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
