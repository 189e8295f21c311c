//! A k3d cluster (k3s in Docker), through the `k3d` command-line tool.

use std::path::PathBuf;
use std::time::Duration;

use super::cli::{CliCluster, ProviderCli, Tool};
use crate::cluster::{Cluster, ClusterError};
use crate::images::load::Loader;
use crate::system_node::system_node_label;
use crate::toolchain;
use crate::work_dirs;

pub const K3D: ProviderCli = ProviderCli {
    program: "k3d",
    // Pinned by the Go checksum database, as ci/providers.yml installs it; never a script
    // from a moving branch.
    install: "go install -ldflags '-X github.com/k3d-io/k3d/v5/version.Version=v5.8.3' github.com/k3d-io/k3d/v5@v5.8.3",
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
    /// Give `work_dir` too to keep its kubeconfig: the local provider sweeps the temporary
    /// directories of processes that are gone.
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
pub fn create_args(name: &str, opts: &K3dOptions, api_port: u16) -> Vec<String> {
    let mut args: Vec<String> = vec![
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
    let sync = format!(
        "--kubelet-arg=sync-frequency={}",
        super::KUBELET_SYNC_FREQUENCY
    );
    args.extend(["--k3s-arg".into(), format!("{sync}@server:*")]);
    if opts.agents > 0 {
        args.extend(["--k3s-arg".into(), format!("{sync}@agent:*")]);
        args.extend(["--agents".into(), opts.agents.to_string()]);
    }
    args
}

/// Prints the cluster's kubeconfig; we write it ourselves, readable by us only.
pub fn kubeconfig_args(name: &str) -> Vec<String> {
    vec!["kubeconfig".into(), "get".into(), name.into()]
}

pub fn delete_args(name: &str) -> Vec<String> {
    vec!["cluster".into(), "delete".into(), name.into()]
}

/// A k3d cluster: deleted when it stops or is dropped, unless detached.
pub type K3dCluster = CliCluster;

fn tool(cli: ProviderCli) -> Tool {
    Tool {
        cli,
        delete: delete_args,
        loader: |cluster| Loader::K3d { cluster },
    }
}

/// Creates a cluster with a name of its own and waits for its server.
pub async fn up(opts: K3dOptions) -> Result<K3dCluster, ClusterError> {
    create(K3D, opts).await
}

async fn create(cli: ProviderCli, opts: K3dOptions) -> Result<K3dCluster, ClusterError> {
    let mut cluster = CliCluster::prepare(tool(cli), opts.work_dir.as_deref(), opts.detached)?;
    let api_port = crate::ports::free_ports(1).map_err(ClusterError::NoFreePorts)?[0];
    cluster
        .create(create_args(cluster.name(), &opts, api_port), &opts.image())
        .await?;
    let kubeconfig = cluster.run(kubeconfig_args(cluster.name())).await?;
    work_dirs::write_private(cluster.kubeconfig(), &kubeconfig)?;
    cluster.keep_running(opts.detached);
    Ok(cluster)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::cli::tool::fake::FakeCli;

    #[test]
    fn command_lines() {
        let image = format!("rancher/k3s:{}-k3s1", toolchain::KUBERNETES);
        let create = format!(
            "k3d cluster create awconf-7-0 --kubeconfig-update-default=false \
             --kubeconfig-switch-context=false --wait --timeout 180s \
             --api-port 127.0.0.1:6550 --k3s-arg --disable=traefik@server:0 \
             --k3s-arg --node-label=awconf.dev/system=true@server:0 --image {image} \
             --k3s-arg --kubelet-arg=sync-frequency=5s@server:*"
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
        for (args, expected) in [
            (
                create_args("awconf-7-0", &K3dOptions::default(), 6550),
                create,
            ),
            (
                create_args("awconf-7-1", &other_image, 6551),
                "k3d cluster create awconf-7-1 --kubeconfig-update-default=false \
                 --kubeconfig-switch-context=false --wait --timeout 300s \
                 --api-port 127.0.0.1:6551 --k3s-arg --disable=traefik@server:0 \
                 --k3s-arg --node-label=awconf.dev/system=true@server:0 \
                 --image rancher/k3s:v1.36.0-k3s1 \
                 --k3s-arg --kubelet-arg=sync-frequency=5s@server:*"
                    .into(),
            ),
            (
                create_args("awconf-7-2", &with_agents, 6552),
                format!(
                    "k3d cluster create awconf-7-2 --kubeconfig-update-default=false \
                     --kubeconfig-switch-context=false --wait --timeout 180s \
                     --api-port 127.0.0.1:6552 --k3s-arg --disable=traefik@server:0 \
                     --k3s-arg --node-label=awconf.dev/system=true@server:0 \
                     --image {image} \
                     --k3s-arg --kubelet-arg=sync-frequency=5s@server:* \
                     --k3s-arg --kubelet-arg=sync-frequency=5s@agent:* --agents 2"
                ),
            ),
            (
                kubeconfig_args("awconf-7-0"),
                "k3d kubeconfig get awconf-7-0".into(),
            ),
            (
                delete_args("awconf-7-0"),
                "k3d cluster delete awconf-7-0".into(),
            ),
        ] {
            assert_eq!(K3D.command_line(&args), expected);
        }
    }

    #[test]
    fn each_k3s_argument_is_one_word() {
        let args = create_args("n", &K3dOptions::default(), 1);
        let k3s_args: Vec<_> = args
            .windows(2)
            .filter(|w| w[0] == "--k3s-arg")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(
            k3s_args,
            [
                "--disable=traefik@server:0",
                "--node-label=awconf.dev/system=true@server:0",
                "--kubelet-arg=sync-frequency=5s@server:*"
            ]
        );
    }

    #[tokio::test]
    async fn the_kubeconfig_k3d_prints_is_kept_private_and_the_cluster_is_deleted_once() {
        use std::os::unix::fs::PermissionsExt;
        let bin = tempfile::tempdir().unwrap();
        let fake = FakeCli::new(bin.path(), "apiVersion: v1", 0);
        let mut cluster = create(fake.cli, K3dOptions::default()).await.unwrap();
        let (name, work_dir) = (cluster.name().to_string(), cluster.work_dir().to_path_buf());
        let kubeconfig = cluster.kubeconfig().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(&kubeconfig).unwrap(),
            "apiVersion: v1"
        );
        let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        cluster.stop().await.unwrap();
        cluster.stop().await.unwrap();
        drop(cluster);
        let calls = fake.calls();
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert!(
            calls[0].starts_with(&format!("cluster create {name} ")),
            "{calls:?}"
        );
        assert_eq!(
            calls[1..],
            [
                format!("kubeconfig get {name}"),
                format!("cluster delete {name}")
            ]
        );
        assert!(!work_dir.exists());
    }

    #[tokio::test]
    async fn dropping_deletes_the_cluster_unless_it_is_detached() {
        for (detached, status, deleted) in [
            (false, 0, true),
            (true, 0, false),
            (false, 1, true),
            (true, 1, true),
        ] {
            let bin = tempfile::tempdir().unwrap();
            let fake = FakeCli::new(bin.path(), "", status);
            let opts = K3dOptions {
                detached,
                work_dir: Some(bin.path().join("cluster")),
                ..K3dOptions::default()
            };
            let up = create(fake.cli, opts).await;
            assert_eq!(up.is_ok(), status == 0);
            drop(up);
            let calls = fake.calls();
            assert_eq!(
                calls
                    .last()
                    .is_some_and(|c| c.starts_with("cluster delete awconf-")),
                deleted,
                "detached {detached}, k3d exits {status}: {calls:?}"
            );
        }
    }

    #[test]
    fn a_missing_k3d_says_how_to_install_it() {
        assert!(
            K3D.missing().to_string().contains("go install")
                && K3D.missing().to_string().contains("k3d/v5@v5.8.3")
        );
        let workflow = include_str!("../../../ci/providers.yml");
        assert!(
            workflow.contains("K3D_VERSION: v5.8.3"),
            "ci/providers.yml pins another k3d"
        );
    }
}
