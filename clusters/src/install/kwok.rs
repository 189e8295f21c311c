//! KWOK in the cluster: its `kustomize/kwok` manifests with an image of the pinned binary,
//! the suite's stages as `Stage` objects, and fake nodes tainted so that only pods which
//! tolerate them (the suite's, through its ResourceFlavor) land there.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::manifests::{
    container_mut, find_mut, kustomize, parse, probe_every_second, set_arg, use_loaded_image,
};
use super::{InstallError, Target, apply, ready};
use crate::images;
use crate::nodes::{self, NodeShape};
use crate::providers::local::commands::kwok_config;
use crate::toolchain::{self, Component, KWOK};

pub const NAMESPACE: &str = "kube-system";
pub const DEPLOYMENT: &str = "kwok-controller";
/// Fake pods' addresses: apart from kind's pod network (10.244/16), the real node's
/// (10.123/16) and the Service range (10.96/12).
pub const POD_CIDR: &str = "10.124.0.0/16";

pub fn image_reference() -> String {
    format!("awconf.local/kwok:{KWOK}")
}

/// KWOK's manifests for this install: the release's, with our image and pod range.
pub fn manifests(target: &Target) -> Result<Vec<Value>, InstallError> {
    let source = toolchain::module_source(&Component::kwok(), &target.cache, "sigs.k8s.io/kwok")?;
    let mut objects = kustomize(&target.cache, &source.join("kustomize/kwok"))?;
    edit(&mut objects)?;
    Ok(objects)
}

/// What KWOK asks of its node. The release asks nothing, which makes it a BestEffort pod with
/// the least CPU weight there is (2 shares against Kueue's 512): on a busy node the fake
/// kubelets of every suite pod fell seconds behind (up to 10 s from binding to Running beside
/// one other suite, and in CI a re-created pod was not Running 39 s after its AppWrapper
/// was). A quarter of a core fits beside Kueue and the controller on a two-core node.
pub const REQUESTS: (&str, &str) = ("250m", "64Mi");

/// Our image and pod range, its requests, and its startup and readiness probes every second
/// from the start (the release's first look came 2 to 12 s after it started; as many seconds
/// of failed startup probes are allowed as before).
pub fn edit(objects: &mut [Value]) -> Result<(), InstallError> {
    let deployment = find_mut(objects, "Deployment", DEPLOYMENT)?;
    let container = container_mut(deployment, "kwok-controller")?;
    use_loaded_image(container, &image_reference());
    set_arg(container, "cidr", POD_CIDR);
    let (cpu, memory) = REQUESTS;
    container["resources"]["requests"] = serde_json::json!({ "cpu": cpu, "memory": memory });
    probe_every_second(container, "startupProbe");
    probe_every_second(container, "readinessProbe");
    Ok(())
}

/// The suite's node and pod stages, as objects.
pub fn stages() -> Result<Vec<Value>, InstallError> {
    let stages = parse(&kwok_config()).map_err(InstallError::Render)?;
    Ok(stages
        .into_iter()
        .filter(|s| s["kind"] == "Stage")
        .collect())
}

/// Installs KWOK with the suite's stages and `nodes` fake nodes; waits until they are Ready.
pub async fn install(
    target: &Target,
    nodes: usize,
    shape: &NodeShape,
) -> Result<Duration, InstallError> {
    let started = Instant::now();
    let component = Component::kwok();
    let cache = target.cache.clone();
    let build = component.clone();
    tokio::task::spawn_blocking(move || toolchain::build_all(std::slice::from_ref(&build), &cache))
        .await
        .map_err(|e| InstallError::Other(e.to_string()))??;
    let image = images::binary_image(&image_reference(), &component.binary(&target.cache, "kwok"))?;
    target.load(image, "kwok").await?;
    let rendered = {
        let target = target.clone();
        tokio::task::spawn_blocking(move || manifests(&target))
            .await
            .map_err(|e| InstallError::Other(e.to_string()))??
    };
    apply::apply_all(&target.client, &rendered).await?;
    for stage in stages()? {
        apply::apply(&target.client, &stage).await?;
    }
    let client = &target.client;
    let shape = NodeShape {
        tainted: true,
        ..shape.clone()
    };
    nodes::ensure_fake_nodes(client, nodes, &shape).await?;
    ready::until("the KWOK controller", Duration::from_secs(180), || {
        ready::deployment_available(client, NAMESPACE, DEPLOYMENT)
    })
    .await?;
    let all = nodes::count(client).await?;
    nodes::wait_schedulable(client, all, Duration::from_secs(120)).await?;
    Ok(started.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_stages_become_objects() {
        let stages = stages().unwrap();
        let names: Vec<&str> = stages
            .iter()
            .map(|s| s["metadata"]["name"].as_str().unwrap())
            .collect();
        for name in ["node-initialize", "pod-ready", "pod-fail", "pod-delete"] {
            assert!(names.contains(&name), "{names:?}");
        }
        assert!(
            stages
                .iter()
                .all(|s| s["apiVersion"] == "kwok.x-k8s.io/v1alpha1")
        );
    }

    #[test]
    fn the_release_deployment_runs_our_image_with_our_pod_range() {
        let mut objects = parse(
            "
apiVersion: apps/v1
kind: Deployment
metadata: {name: kwok-controller, namespace: kube-system}
spec:
  template:
    spec:
      containers:
      - name: kwok-controller
        image: registry.k8s.io/kwok/kwok
        args: [--config=/root/.kwok/kwok.yaml, --node-ip=$(POD_IP)]
        startupProbe: {httpGet: {path: /healthz, port: 10247}, initialDelaySeconds: 2, periodSeconds: 10, failureThreshold: 3}
        readinessProbe: {httpGet: {path: /healthz, port: 10247}, initialDelaySeconds: 2, periodSeconds: 20, failureThreshold: 5}
",
        )
        .unwrap();
        edit(&mut objects).unwrap();
        let container = &objects[0]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], format!("awconf.local/kwok:{KWOK}"));
        assert_eq!(
            container["args"],
            serde_json::json!([
                "--config=/root/.kwok/kwok.yaml",
                "--node-ip=$(POD_IP)",
                "--cidr=10.124.0.0/16"
            ])
        );
        // Not BestEffort: a starved fake kubelet would look like a slow controller.
        assert_eq!(container["resources"]["requests"]["cpu"], "250m");
        for (probe, failures) in [("startupProbe", 32), ("readinessProbe", 102)] {
            let probe = &container[probe];
            assert_eq!(probe["initialDelaySeconds"], 0, "{probe}");
            assert_eq!(probe["periodSeconds"], 1, "{probe}");
            assert_eq!(probe["failureThreshold"], failures, "{probe}");
            assert_eq!(probe["httpGet"]["path"], "/healthz", "{probe}");
        }
    }
}
