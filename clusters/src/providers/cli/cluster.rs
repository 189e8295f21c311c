//! A cluster made by a provider's command-line tool (kind, k3d, docker for k3s): a name of its own, a work
//! directory for its files, and the tool's delete command when it stops or is dropped, unless
//! it was left running on purpose. A create that fails half-way deletes what it made.

use std::path::{Path, PathBuf};

use super::tool::{ProviderCli, ToolError};
use crate::cluster::{Cluster, ClusterError};
use crate::images::load::Loader;
use crate::work_dirs;

pub struct CliCluster {
    cli: ProviderCli,
    name: String,
    work_dir: PathBuf,
    kubeconfig: PathBuf,
    remove_work_dir: bool,
    delete: Vec<String>,
    loader: Loader,
    /// Set once the create command has been asked for: a failed create may leave nodes behind.
    created: bool,
    detached: bool,
}

/// What a provider module tells [`CliCluster::prepare`].
pub struct Tool {
    pub cli: ProviderCli,
    /// Its delete command's arguments for a cluster name.
    pub delete: fn(&str) -> Vec<String>,
    /// Where images for a cluster of this name are loaded.
    pub loader: fn(String) -> Loader,
}

impl CliCluster {
    /// A new name and work directory (`work_dir`, kept, or a temporary one removed when the
    /// cluster goes); nothing is created yet.
    pub fn prepare(
        tool: Tool,
        work_dir: Option<&Path>,
        detached: bool,
    ) -> Result<Self, ClusterError> {
        let name = work_dirs::next_cluster_name();
        let (work_dir, remove_work_dir) = match work_dir {
            Some(dir) => {
                work_dirs::create_named_work_dir(dir)?;
                (dir.to_path_buf(), false)
            }
            None => {
                let label = Path::new(&tool.cli.program)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                (work_dirs::create_work_dir(&label)?, !detached)
            }
        };
        Ok(Self {
            cli: tool.cli,
            kubeconfig: work_dir.join("kubeconfig.yaml"),
            delete: (tool.delete)(&name),
            loader: (tool.loader)(name.clone()),
            name,
            work_dir,
            remove_work_dir,
            created: false,
            detached: false,
        })
    }

    /// Runs the tool's create command and returns what it printed.
    pub async fn create(&mut self, args: Vec<String>, image: &str) -> Result<String, ToolError> {
        tracing::info!(
            "creating {} cluster {} from {image}",
            self.cli.program,
            self.name
        );
        self.created = true;
        self.cli.run_blocking(args).await
    }

    /// Runs another command of the tool.
    pub async fn run(&self, args: Vec<String>) -> Result<String, ToolError> {
        self.cli.run_blocking(args).await
    }

    /// Once up: whether dropping it leaves it running.
    pub fn keep_running(&mut self, detached: bool) {
        self.detached = detached;
    }

    /// For a provider whose images go to a directory under the work directory.
    pub fn set_loader(&mut self, loader: Loader) {
        self.loader = loader;
    }

    pub fn loader(&self) -> Loader {
        self.loader.clone()
    }

    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    fn remove_files(&self) {
        if self.remove_work_dir {
            work_dirs::remove_work_dir(&self.work_dir);
        }
    }
}

impl Drop for CliCluster {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        if self.created
            && let Err(e) = self.cli.run(&self.delete)
        {
            tracing::warn!(
                "{} cluster {} may be left behind: {e}",
                self.cli.program,
                self.name
            );
        }
        self.remove_files();
    }
}

#[async_trait::async_trait]
impl Cluster for CliCluster {
    fn name(&self) -> &str {
        &self.name
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    async fn stop(&mut self) -> Result<(), ClusterError> {
        self.detached = false;
        if self.created {
            self.cli.run_blocking(self.delete.clone()).await?;
            self.created = false;
        }
        self.remove_files();
        Ok(())
    }
}
