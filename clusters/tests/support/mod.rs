//! Helpers shared by the cluster integration tests.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use clusters::Cluster;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde_json::json;

pub async fn namespace(cluster: &dyn Cluster, name: &str) -> kube::Client {
    let client = cluster.client().await.expect("client");
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    client
}

/// Polls `check` every 200 ms until it returns `Some`, or panics with `what` after `secs`.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {secs}s waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Asserts `check` holds on every poll for `secs`.
pub async fn always<F, Fut>(secs: u64, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < until {
        assert!(check().await, "{what} stopped holding");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
