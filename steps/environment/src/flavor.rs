//! The ResourceFlavor every scenario's ClusterQueue uses.

use anyhow::Context as _;
use clusters::kueue::objects as kueue_objects;
use serde_json::json;

/// The ResourceFlavor every scenario's ClusterQueue uses: fake nodes only, plus a toleration
/// admission injects: the fake nodes' taint where they have one.
pub const FLAVOR: &str = "awconf-flavor";
pub const FLAVOR_TOLERATION_KEY: &str = "kwok.x-k8s.io/node";

/// The ResourceFlavor of every scenario's ClusterQueue: fake nodes only, whose taint
/// admission makes the pods tolerate.
pub async fn apply_flavor(client: &kube::Client) -> anyhow::Result<()> {
    let mut flavor = kueue_objects::resource_flavor(FLAVOR);
    flavor["spec"] = json!({
        "nodeLabels": { "type": "kwok" },
        "tolerations": [{ "key": FLAVOR_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule" }],
    });
    kueue_objects::apply(client, &flavor)
        .await
        .context("creating the ResourceFlavor")?;
    Ok(())
}
