//! The controller under test in the cluster: our binary as an image, installed from our
//! install manifests; ready when its Deployment is available and its webhook Service has a
//! ready endpoint.

pub mod manifests;
pub mod own;
pub mod rbac;

use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

pub use manifests::Settings;

use super::{InstallError, Target, apply, ready};
use crate::images;
use crate::pki::Ca;

/// `awconf.local/appwrapper-controller:<digest>`: a new binary gets a new tag, so that
/// re-installing rolls the Deployment.
pub fn image_reference(binary: &Path) -> Result<String, InstallError> {
    Ok(format!(
        "awconf.local/appwrapper-controller:{}",
        binary_digest(binary)?
    ))
}

/// The first 12 hex digits of the binary's SHA-256: an image tag that changes with it.
pub fn binary_digest(binary: &Path) -> Result<String, InstallError> {
    let bytes = std::fs::read(binary)
        .map_err(|e| InstallError::Other(format!("reading {}: {e}", binary.display())))?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().take(6).map(|b| format!("{b:02x}")).collect())
}

/// A CA and a serving certificate for the webhook Service, as cert-manager would issue
/// them: (CA PEM, certificate PEM, key PEM).
pub fn webhook_certificate() -> Result<(String, String, String), InstallError> {
    let service = manifests::WEBHOOK_SERVICE;
    let namespace = manifests::NAMESPACE;
    let dns = [
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ];
    let dns: Vec<&str> = dns.iter().map(String::as_str).collect();
    let ca = Ca::generate().map_err(|e| InstallError::Other(e.to_string()))?;
    let pair = ca
        .serving(service, &dns, &[])
        .map_err(|e| InstallError::Other(e.to_string()))?;
    Ok((ca.pair.cert_pem, pair.cert_pem, pair.key_pem))
}

/// Loads `binary` as an image and installs it with `settings` (whose image is replaced);
/// returns how long it took.
pub async fn install(
    target: &Target,
    binary: &Path,
    mut settings: Settings,
) -> Result<Duration, InstallError> {
    let reference = image_reference(binary)?;
    let image = images::binary_image_at(&reference, binary, "/manager")?;
    settings.image = target.load(image, "appwrapper-controller").await?;
    settings.pull_policy = "Never".into();
    install_image(target, settings).await
}

/// Installs the image `settings` names (already where the nodes can pull it).
pub async fn install_image(
    target: &Target,
    mut settings: Settings,
) -> Result<Duration, InstallError> {
    let started = Instant::now();
    if settings.certificate.is_none() {
        settings.certificate = Some(webhook_certificate()?);
    }
    apply::apply_all(&target.client, &manifests::render(&settings)).await?;
    wait_serving(&target.client, Duration::from_secs(180)).await?;
    Ok(started.elapsed())
}

pub async fn wait_serving(client: &kube::Client, timeout: Duration) -> Result<(), InstallError> {
    ready::until("the controller", timeout, || {
        ready::deployment_available(client, manifests::NAMESPACE, manifests::DEPLOYMENT)
    })
    .await?;
    ready::until("the controller's webhook endpoints", timeout, || {
        ready::service_endpoints_ready(client, manifests::NAMESPACE, manifests::WEBHOOK_SERVICE)
    })
    .await
}
