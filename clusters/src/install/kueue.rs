//! Kueue as its users install it: the `config/default` kustomization of the pinned module,
//! with our manager config and an image of the pinned binary; ready when Kueue's own e2e
//! would call it ready.

use std::path::Path;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::manifests::{container_mut, find_mut, kustomize, probe_every_second, use_loaded_image};
use super::{InstallError, Target, apply, ready, resync};
use crate::images;
use crate::kueue::{KueueSource, Materialized, config, objects};

pub const NAMESPACE: &str = "kueue-system";
pub const DEPLOYMENT: &str = "kueue-controller-manager";
pub const WEBHOOK_SERVICE: &str = "kueue-webhook-service";
pub const CONFIG_MAP: &str = "kueue-manager-config";
/// Where Kueue's internal certificate management writes its webhook's certificates.
pub const CERT_SECRET: &str = "kueue-webhook-server-cert";
/// The labels of Kueue's manager pods (for their logs).
pub const POD_SELECTOR: &str = "control-plane=controller-manager";

/// The image of the manager: a release by its tag, anything else by its binary's digest.
pub fn image_reference(source: &KueueSource, binary: &Path) -> Result<String, InstallError> {
    Ok(match source {
        KueueSource::Release(version) => format!("awconf.local/kueue:{version}"),
        _ => {
            let digest = super::controller::binary_digest(binary)?;
            format!("awconf.local/kueue:build-{digest}")
        }
    })
}

/// The release manifests of the source's `config/default`, edited for this install.
pub fn manifests(
    target: &Target,
    source: &KueueSource,
    built: &Materialized,
    image: &str,
) -> Result<Vec<Value>, InstallError> {
    let mut objects = kustomize(&target.cache, &built.config.join("default"))?;
    edit(&mut objects, image, &source.feature_gates())?;
    Ok(objects)
}

/// Our image and manager config in the release's objects, and its readiness probe every
/// second (Kueue serves a few seconds after it starts; the release's probe, every ten, noticed
/// it up to ten seconds later on every run's set-up); nothing else changes.
pub fn edit(
    objects: &mut [Value],
    image: &str,
    gates: &[(&str, bool)],
) -> Result<(), InstallError> {
    let deployment = find_mut(objects, "Deployment", DEPLOYMENT)?;
    let manager = container_mut(deployment, "manager")?;
    use_loaded_image(manager, image);
    probe_every_second(manager, "readinessProbe");
    let config_map = find_mut(objects, "ConfigMap", CONFIG_MAP)?;
    config_map["data"] =
        json!({ "controller_manager_config.yaml": config::render_in_cluster(gates) });
    Ok(())
}

/// Installs Kueue (the AppWrapper CRD first: Kueue defers its AppWrapper integration for
/// minutes when the CRD comes later) and waits until it serves.
pub async fn install(target: &Target, source: &KueueSource) -> Result<Duration, InstallError> {
    let started = Instant::now();
    let stage = |what: &str| {
        tracing::info!(
            "Kueue install: {what} after {:.1}s",
            started.elapsed().as_secs_f64()
        );
    };
    let aw_crd = appwrapper_controller::crd::appwrapper_crd();
    crate::crds::install(&target.client, std::slice::from_ref(&aw_crd)).await?;
    stage("the AppWrapper CRD established");

    let built = {
        let (source, cache) = (source.clone(), target.cache.clone());
        tokio::task::spawn_blocking(move || source.materialize(&cache))
            .await
            .map_err(|e| InstallError::Other(e.to_string()))??
    };
    let reference = image_reference(source, &built.binary)?;
    let binary = built.binary.clone();
    // The manifests render (kustomize) while the image loads.
    let rendering = {
        let (target, source, reference) = (target.clone(), source.clone(), reference.clone());
        tokio::task::spawn_blocking(move || manifests(&target, &source, &built, &reference))
    };
    let image = images::binary_image_at(&reference, &binary, "/manager")?;
    target.load(image, "kueue").await?;
    stage("its image loaded");
    let rendered = rendering
        .await
        .map_err(|e| InstallError::Other(e.to_string()))??;
    stage("its manifests rendered");
    apply::apply_all(&target.client, &rendered).await?;
    stage("its manifests applied");
    wait_serving(&target.client).await?;
    stage("serving");
    Ok(started.elapsed())
}

/// Kueue's e2e readiness: the manager available, its webhook endpoints ready, a dry-run
/// ResourceFlavor accepted, and a dry-run AppWrapper defaulted to `suspend: true`.
///
/// Meanwhile, each time Kueue has written its webhook certificates into their Secret, its pods
/// are made to see them now ([`resync`]): it serves only once they are in its volume, which
/// otherwise took from 1 to 82 s on the real node and up to a minute and a half on any cluster.
pub async fn wait_serving(client: &kube::Client) -> Result<(), InstallError> {
    let timeout = Duration::from_secs(240);
    let shown = std::sync::Mutex::new(None::<String>);
    ready::until("the Kueue manager", timeout, || async {
        if let Err(e) = show_certificates(client, &shown).await {
            tracing::debug!("Kueue's certificates not shown to its pods yet: {e}");
        }
        ready::deployment_available(client, NAMESPACE, DEPLOYMENT).await
    })
    .await?;
    ready::until("Kueue's webhook endpoints", timeout, || {
        ready::service_endpoints_ready(client, NAMESPACE, WEBHOOK_SERVICE)
    })
    .await?;
    ready::until("Kueue's webhooks", timeout, || async {
        match dry_run_probes(client).await {
            Ok(()) => Ok(Ok(())),
            Err(why) => Ok(Err(why)),
        }
    })
    .await
}

/// Resyncs Kueue's pods once for each version of its certificate Secret that holds them.
async fn show_certificates(
    client: &kube::Client,
    shown: &std::sync::Mutex<Option<String>>,
) -> Result<(), InstallError> {
    let Some(version) = resync::secret_with(client, NAMESPACE, CERT_SECRET, "ca.crt").await? else {
        return Ok(());
    };
    if shown.lock().ok().and_then(|s| s.clone()).as_ref() == Some(&version) {
        return Ok(());
    }
    resync::pods(client, NAMESPACE, POD_SELECTOR, &version).await?;
    tracing::info!("Kueue install: its pods resynced to show certificates {version}");
    if let Ok(mut shown) = shown.lock() {
        *shown = Some(version);
    }
    Ok(())
}

async fn dry_run_probes(client: &kube::Client) -> Result<(), String> {
    let dry_run = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let flavor_resource = ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: objects::API_VERSION.into(),
        kind: "ResourceFlavor".into(),
        plural: "resourceflavors".into(),
    };
    let flavor: DynamicObject =
        serde_json::from_value(objects::resource_flavor("awconf-install-probe"))
            .map_err(|e| e.to_string())?;
    Api::<DynamicObject>::all_with(client.clone(), &flavor_resource)
        .create(&dry_run, &flavor)
        .await
        .map_err(|e| format!("a dry-run ResourceFlavor was refused: {e}"))?;

    let aw_resource = ApiResource {
        group: "workload.codeflare.dev".into(),
        version: "v1beta2".into(),
        api_version: "workload.codeflare.dev/v1beta2".into(),
        kind: "AppWrapper".into(),
        plural: "appwrappers".into(),
    };
    let appwrapper: DynamicObject =
        serde_json::from_value(probe_appwrapper()).map_err(|e| e.to_string())?;
    let created = Api::<DynamicObject>::namespaced_with(client.clone(), "default", &aw_resource)
        .create(&dry_run, &appwrapper)
        .await
        .map_err(|e| format!("a dry-run AppWrapper was refused: {e}"))?;
    if created.data["spec"]["suspend"] == json!(true) {
        Ok(())
    } else {
        Err("a dry-run AppWrapper with a queue name was not defaulted to suspend: true (Kueue's AppWrapper integration is not active yet)".into())
    }
}

fn probe_appwrapper() -> Value {
    json!({
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {
            "name": "awconf-install-probe",
            "labels": { "kueue.x-k8s.io/queue-name": "awconf-install-probe" },
        },
        "spec": { "components": [{ "template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": "probe" },
            "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "c", "image": "busybox", "resources": { "requests": { "cpu": "1m" } } }],
            },
        }}]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::manifests::parse;

    #[test]
    fn the_release_deployment_runs_our_image_and_config() {
        let mut objects = parse(
            "
apiVersion: v1
kind: ConfigMap
metadata: {name: kueue-manager-config, namespace: kueue-system}
data: {controller_manager_config.yaml: 'shipped'}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kueue-controller-manager, namespace: kueue-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: 'x:main'
        imagePullPolicy: Always
        command: [/manager]
        readinessProbe: {httpGet: {path: /readyz, port: 8081}, initialDelaySeconds: 5, periodSeconds: 10}
",
        )
        .unwrap();
        let gates = crate::kueue::KueueVersion(0, 19, 2).feature_gates();
        edit(&mut objects, "awconf.local/kueue:v0.19.2", &gates).unwrap();
        let config = objects[0]["data"]["controller_manager_config.yaml"]
            .as_str()
            .unwrap();
        assert!(
            config.contains("workload.codeflare.dev/appwrapper"),
            "{config}"
        );
        let container = &objects[1]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "awconf.local/kueue:v0.19.2");
        assert_eq!(container["imagePullPolicy"], "Never");
        assert_eq!(container["command"], json!(["/manager"]));
        assert_eq!(
            container["readinessProbe"],
            json!({ "httpGet": { "path": "/readyz", "port": 8081 }, "initialDelaySeconds": 0, "periodSeconds": 1, "failureThreshold": 35 })
        );
    }
}
