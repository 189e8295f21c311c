//! Release manifests as objects: a kustomization rendered by the pinned kubectl, and the
//! edits an install makes to them (images, arguments, a config file).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::InstallError;
use crate::toolchain::{self, Component};

/// `kubectl kustomize <dir>` with the pinned kubectl (built on first use).
pub fn kustomize(cache: &Path, dir: &Path) -> Result<Vec<Value>, InstallError> {
    let kubectl = Component::kubectl();
    toolchain::build_all(std::slice::from_ref(&kubectl), cache)?;
    let binary = kubectl.binary(cache, "kubectl");
    let out = Command::new(&binary)
        .arg("kustomize")
        .arg(dir)
        .output()
        .map_err(|e| InstallError::Render(format!("running {}: {e}", binary.display())))?;
    if !out.status.success() {
        return Err(InstallError::Render(format!(
            "kubectl kustomize {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse(&String::from_utf8_lossy(&out.stdout))
        .map_err(|e| InstallError::Render(format!("kubectl kustomize {}: {e}", dir.display())))
}

/// The objects of a multi-document YAML text; empty documents are dropped.
pub fn parse(text: &str) -> Result<Vec<Value>, String> {
    let docs = serde_saphyr::from_multiple::<Value>(text).map_err(|e| e.to_string())?;
    Ok(docs.into_iter().filter(|d| d.is_object()).collect())
}

/// The one object of `kind` named `name`.
pub fn find_mut<'a>(
    objects: &'a mut [Value],
    kind: &str,
    name: &str,
) -> Result<&'a mut Value, InstallError> {
    objects
        .iter_mut()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .ok_or_else(|| {
            InstallError::Render(format!(
                "the release manifests have no {kind} {name}; is this the expected version?"
            ))
        })
}

/// The container named `container` of a Deployment.
pub fn container_mut<'a>(
    deployment: &'a mut Value,
    container: &str,
) -> Result<&'a mut Value, InstallError> {
    let name = deployment["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .and_then(|cs| cs.iter_mut().find(|c| c["name"] == container))
        .ok_or_else(|| {
            InstallError::Render(format!("Deployment {name} has no container {container}"))
        })
}

/// Makes the container's probe `name` (if it has one) look every second from the start, with
/// as many seconds of failures allowed as before: a component that is up in a few seconds is
/// seen so at once, and one that is slow is given as long as its release gives it.
pub fn probe_every_second(container: &mut Value, name: &str) {
    let probe = &mut container[name];
    if !probe.is_object() {
        return;
    }
    // Kubernetes' defaults where the release leaves them out.
    let delay = probe["initialDelaySeconds"].as_u64().unwrap_or(0);
    let period = probe["periodSeconds"].as_u64().unwrap_or(10);
    let failures = probe["failureThreshold"].as_u64().unwrap_or(3);
    probe["initialDelaySeconds"] = json!(0);
    probe["periodSeconds"] = json!(1);
    probe["failureThreshold"] = json!(delay + period * failures);
}

/// Points a container at an image loaded without a registry.
pub fn use_loaded_image(container: &mut Value, image: &str) {
    container["image"] = json!(image);
    container["imagePullPolicy"] = json!("Never");
}

/// Replaces the `--name=` argument of a container, or adds it.
pub fn set_arg(container: &mut Value, name: &str, value: &str) {
    let flag = format!("--{name}=");
    let arg = json!(format!("{flag}{value}"));
    match container["args"].as_array_mut() {
        Some(args) => {
            args.retain(|a| !a.as_str().is_some_and(|a| a.starts_with(&flag)));
            args.push(arg);
        }
        None => container["args"] = json!([arg]),
    }
}

/// Objects that must exist before the others can be created: namespaces and CRDs.
pub fn is_foundation(object: &Value) -> bool {
    matches!(
        object["kind"].as_str(),
        Some("Namespace" | "CustomResourceDefinition")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOYMENT: &str = "
apiVersion: v1
kind: Namespace
metadata: {name: kueue-system}
---
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kueue-controller-manager, namespace: kueue-system}
spec:
  template:
    spec:
      containers:
      - name: manager
        image: us-central1-docker.pkg.dev/k8s-staging-images/kueue/kueue:main
        imagePullPolicy: Always
        args: [--config=/controller_manager_config.yaml, --zap-log-level=2]
";

    #[test]
    fn an_install_swaps_the_image_and_arguments_of_the_release_deployment() {
        let mut objects = parse(DEPLOYMENT).unwrap();
        assert_eq!(objects.len(), 2, "the empty document is dropped");
        assert!(is_foundation(&objects[0]) && !is_foundation(&objects[1]));
        let deployment = find_mut(&mut objects, "Deployment", "kueue-controller-manager").unwrap();
        let container = container_mut(deployment, "manager").unwrap();
        use_loaded_image(container, "awconf.local/kueue:v0.19.2");
        set_arg(container, "zap-log-level", "3");
        set_arg(container, "feature-gates", "A=true");
        assert_eq!(container["image"], "awconf.local/kueue:v0.19.2");
        assert_eq!(container["imagePullPolicy"], "Never");
        assert_eq!(
            container["args"],
            json!([
                "--config=/controller_manager_config.yaml",
                "--zap-log-level=3",
                "--feature-gates=A=true"
            ])
        );
    }

    #[test]
    fn a_missing_object_or_container_names_what_was_looked_for() {
        let mut objects = parse(DEPLOYMENT).unwrap();
        let e = find_mut(&mut objects, "Deployment", "kwok-controller").unwrap_err();
        assert!(e.to_string().contains("Deployment kwok-controller"), "{e}");
        let deployment = find_mut(&mut objects, "Deployment", "kueue-controller-manager").unwrap();
        let e = container_mut(deployment, "kwok").unwrap_err();
        assert!(e.to_string().contains("no container kwok"), "{e}");
    }
}
