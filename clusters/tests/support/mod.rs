//! Helpers shared by the cluster integration tests.
#![allow(dead_code, unused_imports)]

pub use clusters::testing::{always, eventually};

use clusters::Cluster;

/// A client of `cluster` with namespace `name` created.
pub async fn namespace(cluster: &dyn Cluster, name: &str) -> kube::Client {
    let client = cluster.client().await.expect("client");
    clusters::testing::namespace(&client, name).await;
    client
}
