//! The API client of the steps and hooks.

use std::time::Duration;

/// A client whose requests time out, so that a hung API call fails its step instead of
/// hanging the run (cucumber has no step timeout).
pub(crate) async fn steps_client(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    config.write_timeout = Some(Duration::from_secs(30));
    // Named, so that an audit log tells the harness's requests from the controller's.
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(HARNESS_USER_AGENT),
    ));
    Ok(kube::Client::try_from(config)?)
}

/// The User-Agent of the harness's step client (the embedded controller's client sends none).
pub const HARNESS_USER_AGENT: &str = "awconf-harness";
