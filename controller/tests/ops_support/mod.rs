//! Helpers shared by the operations tests (webhook, leader election, node health) on the
//! embedded cluster.
#![allow(dead_code, unused_imports)]

use appwrapper_controller::api::AppWrapper;
use serde_json::{Value, json};

pub use clusters::testing::{eventually, namespace};

/// One embedded controller (default config) for this test process, on a runtime of its own.
pub fn controller() {
    use clusters::Cluster as _;
    static STARTED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let started = STARTED.get_or_init(|| {
        let cluster = clusters::providers::local::shared()?;
        clusters::testing::keep_running(move || async move {
            let client = cluster.client().await?;
            install_appwrapper_crd(&client).await?;
            appwrapper_controller::control_loop::run(
                appwrapper_controller::config::Config::default(),
                client,
            )
            .await
        })
    });
    started.as_ref().expect("the embedded controller started");
}

pub async fn install_appwrapper_crd(client: &kube::Client) -> anyhow::Result<()> {
    let crd = appwrapper_controller::crd::appwrapper_crd();
    clusters::crds::install(client, std::slice::from_ref(&crd)).await?;
    Ok(())
}

pub fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}]})
}

pub fn pod_template() -> Value {
    json!({"metadata": {"labels": {"app": "aw"}}, "spec": pod_spec()})
}

pub fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod_spec()})
}

pub fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "aw"}}, "template": pod_template()}})
}

/// An AppWrapper with one component per `(template, declared podSets)`.
pub fn appwrapper(name: &str, components: Vec<(Value, Value)>) -> AppWrapper {
    let components: Vec<Value> = components
        .into_iter()
        .map(|(template, pod_sets)| json!({"template": template, "podSets": pod_sets}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name},
        "spec": {"components": components},
    }))
    .unwrap()
}

/// The API status of a refused request; panics if it was not refused.
pub fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected the API to refuse, got {other:?}"),
    }
}

/// A denial as controller-runtime's `admission.Denied` makes it: 403 `Forbidden`, the field
/// errors in the message only.
pub fn assert_forbidden(status: &kube::core::Status) {
    assert_eq!(
        (status.code, status.reason.as_str()),
        (403, "Forbidden"),
        "{status:?}"
    );
    assert!(status.details.is_none(), "{status:?}");
}
