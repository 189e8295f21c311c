//! A k3d cluster (k3s in Docker), through the `k3d` command-line tool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cluster::{Capabilities, Cluster, ClusterError, client_from_kubeconfig};
use crate::images::load::Loader;
use crate::provider_cli::ProviderCli;
use crate::scratch;
use crate::system_node::system_node_label;
use crate::toolchain;

pub const K3D: ProviderCli = ProviderCli {
    program: "k3d",
    install: "curl -s https://raw.githubusercontent.com/k3d-io/k3d/main/install.sh | bash",
};

#[derive(Clone, Debug)]
pub struct K3dOptions {
    /// `rancher/k3s:<toolchain::KUBERNETES>-k3s1` when `None`.
    pub image: Option<String>,
    /// Agent nodes besides the server; the server is schedulable, so none are needed.
    pub agents: usize,
    /// How long `k3d cluster create` waits for the server.
    pub timeout: Duration,
    /// The cluster's files (kubeconfig); a fresh temporary directory when `None`.
    pub work_dir: Option<PathBuf>,
    /// Leave the cluster running when this value is dropped.
    pub detached: bool,
}

impl Default for K3dOptions {
    fn default() -> Self {
        Self {
            image: None,
            agents: 0,
            timeout: Duration::from_secs(180),
            work_dir: None,
            detached: false,
        }
    }
}

impl K3dOptions {
    pub fn image(&self) -> String {
        self.image
            .clone()
            .unwrap_or_else(|| format!("rancher/k3s:{}-k3s1", toolchain::KUBERNETES))
    }
}

/// The API server listens on `127.0.0.1:<api_port>` only, as the local cluster's does, rather
/// than k3d's default of every address. Traefik is left out: the suite needs no ingress, and it
/// would take ports 80 and 443.
pub fn create_command(name: &str, opts: &K3dOptions, api_port: u16) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "k3d".into(),
        "cluster".into(),
        "create".into(),
        name.into(),
        "--kubeconfig-update-default=false".into(),
        "--kubeconfig-switch-context=false".into(),
        "--wait".into(),
        "--timeout".into(),
        format!("{}s", opts.timeout.as_secs()),
        "--api-port".into(),
        format!("127.0.0.1:{api_port}"),
        "--k3s-arg".into(),
        "--disable=traefik@server:0".into(),
        "--k3s-arg".into(),
        format!("--node-label={}@server:0", system_node_label()),
        "--image".into(),
        opts.image(),
    ];
    if opts.agents > 0 {
        argv.extend(["--agents".into(), opts.agents.to_string()]);
    }
    argv
}

/// Prints the cluster's kubeconfig; we write it ourselves, readable by us only.
pub fn kubeconfig_command(name: &str) -> Vec<String> {
    vec!["k3d".into(), "kubeconfig".into(), "get".into(), name.into()]
}

pub fn delete_command(name: &str) -> Vec<String> {
    vec!["k3d".into(), "cluster".into(), "delete".into(), name.into()]
}

pub struct K3dCluster {
    name: String,
    work_dir: PathBuf,
    kubeconfig: PathBuf,
    remove_work_dir: bool,
    /// Set once `k3d cluster create` has been asked for: a failed create may leave nodes behind.
    created: bool,
    detached: bool,
}

impl K3dCluster {
    /// Creates a cluster with a name of its own and waits for its server.
    pub async fn up(opts: K3dOptions) -> Result<Self, ClusterError> {
        let name = scratch::next_cluster_name();
        let (work_dir, remove_work_dir) = match &opts.work_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| scratch::io(dir, e))?;
                (dir.clone(), false)
            }
            None => (scratch::create_work_dir(&name, "k3d")?, !opts.detached),
        };
        let api_port = crate::ports::free_ports(1)
            .map_err(|e| ClusterError::Other(format!("no free port: {e}")))?[0];
        let mut cluster = Self {
            kubeconfig: work_dir.join("kubeconfig.yaml"),
            name,
            work_dir,
            remove_work_dir,
            created: false,
            // Set once up: a create that fails half-way deletes what it made.
            detached: false,
        };
        tracing::info!(
            "creating k3d cluster {} from {}",
            cluster.name,
            opts.image()
        );
        cluster.created = true;
        K3D.run_blocking(create_command(&cluster.name, &opts, api_port))
            .await?;
        let kubeconfig = K3D.run_blocking(kubeconfig_command(&cluster.name)).await?;
        scratch::write_private(&cluster.kubeconfig, &kubeconfig)?;
        cluster.detached = opts.detached;
        Ok(cluster)
    }

    /// Where images for this cluster are loaded.
    pub fn loader(&self) -> Loader {
        Loader::K3d {
            cluster: self.name.clone(),
        }
    }

    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    fn remove_files(&self) {
        if self.remove_work_dir {
            scratch::remove_work_dir(&self.work_dir);
        }
    }
}

impl Drop for K3dCluster {
    fn drop(&mut self) {
        if self.detached {
            return;
        }
        if self.created
            && let Err(e) = K3D.run(&delete_command(&self.name))
        {
            tracing::warn!("k3d cluster {} may be left behind: {e}", self.name);
        }
        self.remove_files();
    }
}

#[async_trait::async_trait]
impl Cluster for K3dCluster {
    fn name(&self) -> &str {
        &self.name
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    async fn client(&self) -> Result<kube::Client, ClusterError> {
        client_from_kubeconfig(&self.kubeconfig).await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            simulated_pod_outcomes: false,
            fake_gpu_nodes: false,
            restartable_control_plane: false,
        }
    }

    async fn stop(&mut self) -> Result<(), ClusterError> {
        self.detached = false;
        if self.created {
            K3D.run_blocking(delete_command(&self.name)).await?;
            self.created = false;
        }
        self.remove_files();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines() {
        let image = format!("rancher/k3s:{}-k3s1", toolchain::KUBERNETES);
        let create = format!(
            "k3d cluster create awconf-7-0 --kubeconfig-update-default=false \
             --kubeconfig-switch-context=false --wait --timeout 180s \
             --api-port 127.0.0.1:6550 --k3s-arg --disable=traefik@server:0 \
             --k3s-arg --node-label=awconf.dev/system=true@server:0 --image {image}"
        );
        let other_image = K3dOptions {
            image: Some("rancher/k3s:v1.36.0-k3s1".into()),
            timeout: Duration::from_secs(300),
            ..K3dOptions::default()
        };
        let with_agents = K3dOptions {
            agents: 2,
            ..K3dOptions::default()
        };
        for (argv, expected) in [
            (
                create_command("awconf-7-0", &K3dOptions::default(), 6550),
                create,
            ),
            (
                create_command("awconf-7-1", &other_image, 6551),
                "k3d cluster create awconf-7-1 --kubeconfig-update-default=false \
                 --kubeconfig-switch-context=false --wait --timeout 300s \
                 --api-port 127.0.0.1:6551 --k3s-arg --disable=traefik@server:0 \
                 --k3s-arg --node-label=awconf.dev/system=true@server:0 \
                 --image rancher/k3s:v1.36.0-k3s1"
                    .into(),
            ),
            (
                create_command("awconf-7-2", &with_agents, 6552),
                format!(
                    "k3d cluster create awconf-7-2 --kubeconfig-update-default=false \
                     --kubeconfig-switch-context=false --wait --timeout 180s \
                     --api-port 127.0.0.1:6552 --k3s-arg --disable=traefik@server:0 \
                     --k3s-arg --node-label=awconf.dev/system=true@server:0 \
                     --image {image} --agents 2"
                ),
            ),
            (
                kubeconfig_command("awconf-7-0"),
                "k3d kubeconfig get awconf-7-0".into(),
            ),
            (
                delete_command("awconf-7-0"),
                "k3d cluster delete awconf-7-0".into(),
            ),
        ] {
            assert_eq!(argv.join(" "), expected);
        }
    }

    #[test]
    fn each_k3s_argument_is_one_word() {
        let argv = create_command("n", &K3dOptions::default(), 1);
        let k3s_args: Vec<_> = argv
            .windows(2)
            .filter(|w| w[0] == "--k3s-arg")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(
            k3s_args,
            [
                "--disable=traefik@server:0",
                "--node-label=awconf.dev/system=true@server:0"
            ]
        );
    }

    #[test]
    fn a_missing_k3d_says_how_to_install_it() {
        assert!(K3D.missing().contains("k3d-io/k3d/main/install.sh"));
    }
}
