//! A second Deployment of the installed controller, for the AppWrappers one label selector
//! picks: a conformance scenario stops, kills and restarts it while the other scenarios go on
//! with the shared one. It runs the shared Deployment's pod template with a ConfigMap of its
//! own, and its pods carry none of the labels that the webhook Service and the shared
//! Deployment select.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use serde_json::{Value, json};

use super::manifests::{DEPLOYMENT, NAMESPACE};
use crate::install::scale::Workload;
use crate::install::{InstallError, apply, ready};

/// The label of such a Deployment, its ConfigMap and its pods; its value is their name.
pub const LABEL: &str = "awconf.dev/own-controller";

/// The flags the copy sets itself, dropped from the shared Deployment's arguments.
const OWN_FLAGS: [&str; 2] = ["--config", "--appwrapper-selector"];

/// The ConfigMap and the Deployment named `name`: `shared`'s pod template, reading
/// `config_yaml` from that ConfigMap and reconciling the AppWrappers `appwrapper_selector`
/// picks. Its CPU request is small: one node of two cores holds a dozen of them.
pub fn render(
    shared: &Value,
    name: &str,
    appwrapper_selector: &str,
    config_yaml: &str,
) -> Result<[Value; 2], InstallError> {
    let mut template = shared["spec"]["template"].clone();
    let container = template["spec"]["containers"]
        .get_mut(0)
        .ok_or_else(|| InstallError::Render(format!("Deployment {DEPLOYMENT} has no container")))?;
    let mut args = own_args(
        container["args"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    );
    args.push(format!("--config={name}"));
    args.push(format!("--appwrapper-selector={appwrapper_selector}"));
    container["args"] = json!(args);
    container["resources"]["requests"] = json!({ "cpu": "10m", "memory": "32Mi" });
    let labels = json!({ "app.kubernetes.io/name": "appwrapper", LABEL: name });
    template["metadata"]["labels"] = labels.clone();
    let metadata = json!({ "name": name, "namespace": NAMESPACE, "labels": labels });
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata.clone(),
        "data": { "config.yaml": config_yaml },
    });
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { LABEL: name } },
            "template": template,
        },
    });
    Ok([config_map, deployment])
}

/// `args` without the flags the copy sets (`--flag=value` or `--flag value`).
fn own_args(args: &[Value]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut words = args.iter().filter_map(Value::as_str);
    while let Some(word) = words.next() {
        let flag = word.split('=').next().unwrap_or(word);
        if OWN_FLAGS.contains(&flag) {
            if !word.contains('=') {
                words.next();
            }
            continue;
        }
        kept.push(word.to_string());
    }
    kept
}

/// Creates the Deployment `name` beside the shared one and waits up to `timeout` until it
/// is available; the returned workload stops, kills and starts it.
pub async fn deploy(
    client: &kube::Client,
    name: &str,
    appwrapper_selector: &str,
    config_yaml: &str,
    timeout: Duration,
) -> Result<Workload, InstallError> {
    let shared = Api::<Deployment>::namespaced(client.clone(), NAMESPACE)
        .get(DEPLOYMENT)
        .await?;
    let shared = serde_json::to_value(shared).map_err(|e| InstallError::Render(e.to_string()))?;
    apply::apply_all(
        client,
        &render(&shared, name, appwrapper_selector, config_yaml)?,
    )
    .await?;
    ready::until(name, timeout, || {
        ready::deployment_available(client, NAMESPACE, name)
    })
    .await?;
    Ok(Workload {
        client: client.clone(),
        namespace: NAMESPACE.into(),
        deployment: name.into(),
        selector: format!("{LABEL}={name}"),
    })
}

/// Stops the Deployment's pods (gracefully), then deletes it and its ConfigMap.
pub async fn remove(workload: &Workload) -> Result<(), InstallError> {
    workload.stop().await?;
    delete_labelled(&workload.client, &workload.selector).await
}

/// Deletes every such Deployment and ConfigMap: those a run left when it was interrupted.
/// Their pods end as their termination grace period allows.
pub async fn remove_all(client: &kube::Client) -> Result<(), InstallError> {
    delete_labelled(client, LABEL).await
}

async fn delete_labelled(client: &kube::Client, selector: &str) -> Result<(), InstallError> {
    let params = DeleteParams::background();
    let list = ListParams::default().labels(selector);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    deployments.delete_collection(&params, &list).await?;
    config_maps.delete_collection(&params, &list).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::install::controller::manifests::{self, Settings};

    fn shared() -> Value {
        let mut settings = Settings::release("example.com/aw:1");
        settings.appwrapper_selector = Some("!awconf.dev/controller".into());
        manifests::render(&settings)
            .into_iter()
            .find(|o| o["kind"] == "Deployment")
            .unwrap()
    }

    #[test]
    fn the_copy_runs_the_shared_image_for_its_selector_with_its_config_map() {
        let [config_map, deployment] = render(
            &shared(),
            "own-a",
            "awconf.dev/controller=a",
            "webhooksEnabled: false\n",
        )
        .unwrap();
        assert_eq!(config_map["metadata"]["name"], "own-a");
        assert_eq!(
            config_map["data"]["config.yaml"],
            "webhooksEnabled: false\n"
        );
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "example.com/aw:1");
        assert_eq!(
            container["args"],
            json!([
                "--zap-log-level=2",
                "--config=own-a",
                "--appwrapper-selector=awconf.dev/controller=a"
            ])
        );
    }

    #[test]
    fn the_copys_pods_are_not_the_webhook_services_nor_the_shared_deployments() {
        let [_, deployment] = render(&shared(), "own-a", "x=a", "").unwrap();
        let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
        assert!(pod_labels.get("control-plane").is_none(), "{pod_labels}");
        assert_eq!(pod_labels[LABEL], "own-a");
        assert_eq!(
            deployment["spec"]["selector"]["matchLabels"],
            json!({ LABEL: "own-a" })
        );
    }

    #[test]
    fn the_flags_the_copy_sets_are_dropped_in_either_spelling() {
        let args = [
            json!("--config"),
            json!("cm"),
            json!("-v"),
            json!("--appwrapper-selector=x"),
            json!("--configuration=kept"),
        ];
        assert_eq!(own_args(&args), ["-v", "--configuration=kept"]);
    }
}
