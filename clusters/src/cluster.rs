//! What every cluster provider offers the harness.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(transparent)]
    Build(#[from] crate::toolchain::BuildError),
    #[error(transparent)]
    Pki(#[from] crate::pki::PkiError),
    #[error(transparent)]
    Health(#[from] crate::health::HealthError),
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("no free ports: {0}")]
    NoFreePorts(#[source] std::io::Error),
    /// The own error of a part every provider shares (Kueue, CRDs, fake nodes): like a
    /// provider's, its module defines the conversion, so that this type names none of them.
    #[error(transparent)]
    Part(Box<dyn std::error::Error + Send + Sync + 'static>),
    #[error(transparent)]
    WorkDir(#[from] crate::work_dirs::WorkDirError),
    /// A provider's own error: each provider module defines its type and the conversion, so
    /// that this shared type names none of them.
    #[error(transparent)]
    Provider(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// What a provider can do; scenarios that need a missing capability are skipped with the reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Pod outcomes steered by labels (KWOK stages).
    pub simulated_pod_outcomes: bool,
    /// Nodes advertising `nvidia.com/gpu` without GPUs.
    pub fake_gpu_nodes: bool,
    /// Kueue and the controller can be stopped and restarted by the harness.
    pub restartable_control_plane: bool,
}

#[async_trait::async_trait]
pub trait Cluster: Send + Sync {
    fn name(&self) -> &str;
    fn kubeconfig(&self) -> &Path;
    /// A fresh client; clients are tied to the async runtime that made them.
    async fn client(&self) -> Result<kube::Client, ClusterError> {
        client_from_kubeconfig(self.kubeconfig()).await
    }
    /// What the cluster offers by itself; what an install adds is the run's to declare.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn stop(&mut self) -> Result<(), ClusterError>;
}

pub async fn client_from_kubeconfig(path: &Path) -> Result<kube::Client, ClusterError> {
    let err = |message: String| ClusterError::Kubeconfig {
        path: path.display().to_string(),
        message,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| err(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| err(e.to_string()))?;
    Ok(kube::Client::try_from(config)?)
}
