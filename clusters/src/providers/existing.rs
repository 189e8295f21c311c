//! A cluster the user already has, reached through their kubeconfig. Nothing of it is ours:
//! stopping forgets it and deletes only our copy of the kubeconfig.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::config::Kubeconfig;

use crate::cluster::{Cluster, ClusterError};
use crate::kubeconfig::{pin_context, to_yaml};
use crate::work_dirs;

/// How long the API server has to answer `/version`.
const REACH_TIMEOUT: Duration = Duration::from_secs(30);

pub struct ExistingCluster {
    context: String,
    work_dir: PathBuf,
    /// Our copy, pinned to the context.
    kubeconfig: PathBuf,
}

/// Why an existing cluster cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExistingError {
    #[error("the API server of context `{context}` does not answer /version: {reason}")]
    Unreachable { context: String, reason: String },
}

impl From<ExistingError> for ClusterError {
    fn from(e: ExistingError) -> Self {
        ClusterError::Provider(Box::new(e))
    }
}

impl ExistingCluster {
    /// Pins `context` (the kubeconfig's current context when `None`) in a copy of `kubeconfig`
    /// (kubectl's when `None`: the files `KUBECONFIG` lists, merged, or `~/.kube/config`) and
    /// checks that the API server answers.
    pub async fn connect(
        kubeconfig: Option<PathBuf>,
        context: Option<String>,
    ) -> Result<Self, ClusterError> {
        let source = match &kubeconfig {
            Some(path) => path.display().to_string(),
            None => crate::kubeconfig::describe_kubectl_default(),
        };
        let err = |message: String| ClusterError::Kubeconfig {
            path: source.clone(),
            message,
        };
        // Relative certificate paths come back absolute, so the copy works from anywhere.
        let config = match &kubeconfig {
            Some(path) => Kubeconfig::read_from(path),
            None => Kubeconfig::read(),
        }
        .map_err(|e| err(e.to_string()))?;
        let pinned = pin_context(config, context.as_deref()).map_err(|e| err(e.to_string()))?;
        let context = pinned.current_context.clone().unwrap_or_default();
        let text = to_yaml(&pinned).map_err(|e| err(e.to_string()))?;
        let work_dir = work_dirs::create_work_dir("existing")?;
        let cluster = Self {
            kubeconfig: work_dir.join("kubeconfig.yaml"),
            context,
            work_dir,
        };
        work_dirs::write_private(&cluster.kubeconfig, &text)?;
        cluster.check_reachable().await?;
        Ok(cluster)
    }

    async fn check_reachable(&self) -> Result<(), ClusterError> {
        let client = self.client().await?;
        let unreachable = |reason: String| ExistingError::Unreachable {
            context: self.context.clone(),
            reason,
        };
        let version = tokio::time::timeout(REACH_TIMEOUT, client.apiserver_version())
            .await
            .map_err(|_| unreachable(format!("no answer within {}s", REACH_TIMEOUT.as_secs())))?
            .map_err(|e| unreachable(e.to_string()))?;
        tracing::info!(
            "existing cluster (context {}) runs Kubernetes {}",
            self.context,
            version.git_version
        );
        Ok(())
    }
}

impl Drop for ExistingCluster {
    fn drop(&mut self) {
        work_dirs::remove_work_dir(&self.work_dir);
    }
}

#[async_trait::async_trait]
impl Cluster for ExistingCluster {
    /// The kubeconfig context.
    fn name(&self) -> &str {
        &self.context
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Never deletes anything of the user's; our kubeconfig copy goes on drop.
    async fn stop(&mut self) -> Result<(), ClusterError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Capabilities;

    fn write_kubeconfig(dir: &Path, server: &str) -> PathBuf {
        let path = dir.join("config");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\n\
             users:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: mine\n  context: {{cluster: c, user: u}}\n\
             current-context: mine\n"
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    #[tokio::test]
    async fn a_reachable_cluster_gets_a_pinned_private_copy_that_goes_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_kubeconfig(dir.path(), &crate::testing::version_server().await);
        let before = std::fs::read_to_string(&path).unwrap();
        let mut cluster = ExistingCluster::connect(Some(path.clone()), Some("mine".into()))
            .await
            .unwrap();
        assert_eq!(cluster.name(), "mine");
        assert_ne!(cluster.kubeconfig(), path.as_path());
        let copy = Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
        assert_eq!(copy.current_context.as_deref(), Some("mine"));
        assert_eq!(cluster.capabilities(), Capabilities::default());
        cluster.stop().await.unwrap();
        cluster.stop().await.unwrap();
        let copy = cluster.kubeconfig().to_path_buf();
        drop(cluster);
        assert!(!copy.exists());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[tokio::test]
    async fn a_missing_context_is_reported_with_the_file_and_the_available_contexts() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_kubeconfig(dir.path(), "https://127.0.0.1:1");
        let err = ExistingCluster::connect(Some(path.clone()), Some("theirs".into()))
            .await
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "kubeconfig {}: no context `theirs` in the kubeconfig; its contexts: mine",
                path.display()
            )
        );
    }

    #[tokio::test]
    async fn an_api_server_that_does_not_answer_is_an_error_and_the_user_s_file_stays() {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::ports::free_ports(1).unwrap()[0];
        let path = write_kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"));
        let before = std::fs::read_to_string(&path).unwrap();
        let err = ExistingCluster::connect(Some(path.clone()), None)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("the API server of context `mine` does not answer /version"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }
}
