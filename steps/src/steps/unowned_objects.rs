//! Objects that no AppWrapper owns: a controller must never adopt or delete them.

use super::outcome::Outcome;
use cucumber::{given, then};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::secs;
use crate::wait;
use crate::world::AwWorld;

#[given(regex = r#"^a Pod "([^"]+)" that no AppWrapper owns$"#)]
async fn foreign_pod(w: &mut AwWorld, name: String) -> Outcome {
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": w.ns},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }))?;
    Api::<Pod>::namespaced(w.client.clone(), &w.ns)
        .create(&PostParams::default(), &pod)
        .await?;
    Ok(())
}

#[then(regex = r#"^the Pod "([^"]+)" keeps existing for (\d+) seconds$"#)]
async fn keeps_existing(w: &mut AwWorld, name: String, seconds: u64) -> Outcome {
    let pods = Api::<Pod>::namespaced(w.client.clone(), &w.ns);
    let (pods, name) = (&pods, name.as_str());
    Ok(wait::always(
        secs(seconds),
        &format!("Pod {name} existing, not being deleted"),
        move || async move {
            let pod = pods.get_opt(name).await?;
            let deleting = pod
                .as_ref()
                .is_some_and(|p| p.metadata.deletion_timestamp.is_some());
            Ok(match pod {
                Some(_) if !deleting => None,
                Some(_) => Some(format!("Pod {name} is being deleted")),
                None => Some(format!("Pod {name} is gone")),
            })
        },
    )
    .await?)
}
