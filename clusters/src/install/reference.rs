//! The reference operator as its users install it: the `config/default` kustomization of its
//! pinned module, with an image made from its pinned binary, or with another image swapped in
//! (ours: the drop-in check that our controller runs from the reference's own manifests).

use std::time::{Duration, Instant};

use serde_json::Value;

use super::controller::manifests::{DEPLOYMENT, NAMESPACE, WEBHOOK_SERVICE};
use super::manifests::{container_mut, find_mut, kustomize, use_loaded_image};
use super::{InstallError, Target, apply, ready};
use crate::images;
use crate::toolchain::{self, Component};

pub fn image_reference(version: &str) -> String {
    format!("awconf.local/appwrapper-operator:{version}")
}

/// The reference's release objects with `image` in its Deployment; nothing else changes.
pub fn manifests(target: &Target, version: &str, image: &str) -> Result<Vec<Value>, InstallError> {
    let component = Component::appwrapper(version);
    let source = toolchain::module_source(
        &component,
        &target.cache,
        "github.com/project-codeflare/appwrapper",
    )?;
    let mut objects = kustomize(&target.cache, &source.join("config/default"))?;
    let deployment = find_mut(&mut objects, "Deployment", DEPLOYMENT)?;
    use_loaded_image(container_mut(deployment, "manager")?, image);
    Ok(objects)
}

/// Installs the reference operator `version` from its release manifests, running `image`
/// (already loaded) or its own binary's image; waits until its webhooks are served. Its
/// certificate comes from its own rotator, through a Secret volume the kubelet refreshes,
/// which takes up to a couple of minutes.
pub async fn install(
    target: &Target,
    version: &str,
    image: Option<&str>,
) -> Result<Duration, InstallError> {
    let started = Instant::now();
    let image = match image {
        Some(image) => image.to_string(),
        None => {
            let component = Component::appwrapper(version);
            let cache = target.cache.clone();
            let build = component.clone();
            tokio::task::spawn_blocking(move || {
                toolchain::build_all(std::slice::from_ref(&build), &cache)
            })
            .await
            .map_err(|e| InstallError::Other(e.to_string()))??;
            let binary = component.binary(&target.cache, "appwrapper-operator");
            let image = images::binary_image_at(&image_reference(version), &binary, "/manager")?;
            target.load(image, "appwrapper-operator").await?
        }
    };
    let rendered = {
        let (target, version, image) = (target.clone(), version.to_string(), image.clone());
        tokio::task::spawn_blocking(move || manifests(&target, &version, &image))
            .await
            .map_err(|e| InstallError::Other(e.to_string()))??
    };
    apply::apply_all(&target.client, &rendered).await?;
    let client = &target.client;
    let timeout = Duration::from_secs(300);
    ready::until("the reference operator", timeout, || {
        ready::deployment_available(client, NAMESPACE, DEPLOYMENT)
    })
    .await?;
    ready::until("its webhook endpoints", timeout, || {
        ready::service_endpoints_ready(client, NAMESPACE, WEBHOOK_SERVICE)
    })
    .await?;
    Ok(started.elapsed())
}
