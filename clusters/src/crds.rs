//! Installing CustomResourceDefinitions and waiting until they are served.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};

use crate::cluster::ClusterError;
use crate::poll::{self, Look};

/// How long each CRD may take to be Established after it is applied.
const ESTABLISHED_WITHIN: Duration = Duration::from_secs(60);

/// Every CRD in the YAML files of `dir`.
pub fn read_dir(dir: &Path) -> Result<Vec<CustomResourceDefinition>, ClusterError> {
    let err = |e: String| ClusterError::Other(format!("{}: {e}", dir.display()));
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| err(e.to_string()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| err(e.to_string()))?;
        for doc in serde_saphyr::from_multiple::<serde_json::Value>(&text)
            .map_err(|e| err(format!("{}: {e}", file.display())))?
        {
            if doc["kind"] == "CustomResourceDefinition" {
                crds.push(
                    serde_json::from_value(doc)
                        .map_err(|e| err(format!("{}: {e}", file.display())))?,
                );
            }
        }
    }
    Ok(crds)
}

/// Server-side applies the CRDs (replacing older versions in place) and waits until each is
/// Established.
pub async fn install(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
) -> Result<(), ClusterError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("awconf").force();
    for crd in crds {
        let mut crd = crd.clone();
        crd.metadata.managed_fields = None;
        crd.metadata.resource_version = None;
        crd.status = None;
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd)).await?;
    }
    let api = &api;
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let name = name.as_str();
        poll::until(
            ESTABLISHED_WITHIN,
            Duration::from_millis(100),
            move || async move {
                let current = api.get(name).await?;
                let established = current.status.and_then(|s| s.conditions).is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
                Ok(if established {
                    Look::Ready(())
                } else {
                    Look::NotYet(String::new())
                })
            },
            |_| {
                ClusterError::Other(format!(
                    "CRD {name} was not Established within {}s",
                    ESTABLISHED_WITHIN.as_secs()
                ))
            },
        )
        .await?;
    }
    Ok(())
}
