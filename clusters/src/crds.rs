//! Installing CustomResourceDefinitions and waiting until they are served.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};

use crate::cluster::ClusterError;
use crate::poll::{self, Look};

#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", file.display())]
    Yaml {
        file: PathBuf,
        source: Box<serde_saphyr::Error>,
    },
    #[error("{}: {source}", file.display())]
    NotACrd {
        file: PathBuf,
        source: serde_json::Error,
    },
    #[error("CRD {name} was not Established within {seconds}s")]
    NotEstablished { name: String, seconds: u64 },
}

impl From<CrdError> for ClusterError {
    fn from(e: CrdError) -> Self {
        ClusterError::Part(Box::new(e))
    }
}

/// How long each CRD may take to be Established after it is applied.
const ESTABLISHED_WITHIN: Duration = Duration::from_secs(60);

/// Every CRD in the YAML files of `dir`.
pub fn read_dir(dir: &Path) -> Result<Vec<CustomResourceDefinition>, CrdError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|source| CrdError::Read {
            path: dir.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|source| CrdError::Read {
            path: file.clone(),
            source,
        })?;
        let docs = serde_saphyr::from_multiple::<serde_json::Value>(&text).map_err(|e| {
            CrdError::Yaml {
                file: file.clone(),
                source: Box::new(e),
            }
        })?;
        for doc in docs {
            if doc["kind"] == "CustomResourceDefinition" {
                let crd = serde_json::from_value(doc).map_err(|source| CrdError::NotACrd {
                    file: file.clone(),
                    source,
                })?;
                crds.push(crd);
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
                ClusterError::from(CrdError::NotEstablished {
                    name: name.to_string(),
                    seconds: ESTABLISHED_WITHIN.as_secs(),
                })
            },
        )
        .await?;
    }
    Ok(())
}
