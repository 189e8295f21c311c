//! k3s in one privileged container, through the `docker` command-line tool as kind and k3d
//! use it. Needs a Docker daemon on this machine: the kubeconfig and image directories are
//! bind mounts of our own directories.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use super::cli::{CliCluster, ProviderCli, Tool};
use crate::cluster::{Cluster, ClusterError, client_from_kubeconfig};
use crate::images::load::Loader;
use crate::kubeconfig::set_server;
use crate::poll::{self, Look};
use crate::system_node::system_node_label;
use crate::toolchain;
use crate::work_dirs;

pub const DOCKER: ProviderCli = ProviderCli {
    program: "docker",
    install: "apt-get install docker.io (or see https://docs.docker.com/engine/install/)",
};

/// The API server's port inside the container.
const KUBE_SECURE_PORT: u16 = 6443;

#[derive(Clone, Debug)]
pub struct K3sOptions {
    /// `rancher/k3s:<toolchain::KUBERNETES>-k3s1` when `None`; `name:tag`.
    pub image: Option<String>,
    /// For the container to log that k3s is up, then for the node to be Ready.
    pub startup_timeout: Duration,
    /// The cluster's files (kubeconfig, mounts); a fresh temporary directory when `None`.
    pub work_dir: Option<PathBuf>,
    /// Leave the container running when this value is dropped.
    /// Give `work_dir` too to keep its kubeconfig: the local provider sweeps the temporary
    /// directories of processes that are gone.
    pub detached: bool,
}

impl Default for K3sOptions {
    fn default() -> Self {
        Self {
            image: None,
            startup_timeout: Duration::from_secs(180),
            work_dir: None,
            detached: false,
        }
    }
}

impl K3sOptions {
    pub fn image(&self) -> String {
        self.image
            .clone()
            .unwrap_or_else(|| format!("rancher/k3s:{}-k3s1", toolchain::KUBERNETES))
    }
}

/// `(name, tag)` of an image reference; a colon before the last slash is a registry's port.
pub fn split_image(image: &str) -> (String, String) {
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].rfind(':') {
        Some(i) => (
            image[..name_start + i].to_string(),
            image[name_start + i + 1..].to_string(),
        ),
        None => (image.to_string(), "latest".to_string()),
    }
}

/// The k3s server's arguments. The native snapshotter works on any Docker storage driver
/// (overlayfs inside overlayfs does not); Traefik is left out, the suite needs no ingress.
pub fn server_args() -> Vec<String> {
    vec![
        "server".into(),
        "--snapshotter=native".into(),
        "--disable=traefik".into(),
        format!("--node-label={}", system_node_label()),
        format!(
            "--kubelet-arg=sync-frequency={}",
            super::KUBELET_SYNC_FREQUENCY
        ),
    ]
}

pub fn server_url(host: &str, port: u16) -> String {
    format!("https://{host}:{port}")
}

/// The directories of one k3s cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct K3sPaths {
    pub dir: PathBuf,
}

impl K3sPaths {
    /// Mounted at `/etc/rancher/k3s`, where k3s writes `k3s.yaml`.
    pub fn conf_mount(&self) -> PathBuf {
        self.dir.join("etc-rancher-k3s")
    }
    /// Mounted at [`Loader::K3S_IMAGES_DIR`]; k3s imports archives placed there while it runs
    /// (k3s v1.32 and later).
    pub fn images(&self) -> PathBuf {
        self.dir.join("images")
    }
    /// The kubeconfig for the host, with the mapped port.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig.yaml")
    }
}

/// `docker run` for the server, its API port published on `127.0.0.1:<api_port>` only.
/// `K3S_KUBECONFIG_MODE` lets a non-root user who runs Docker read `k3s.yaml`; the work
/// directory around it is ours alone.
pub fn run_args(name: &str, image: &str, paths: &K3sPaths, api_port: u16) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        "--detach".into(),
        "--name".into(),
        name.into(),
        "--privileged".into(),
        "--userns=host".into(),
        "--env".into(),
        "K3S_KUBECONFIG_MODE=644".into(),
        "--volume".into(),
        format!("{}:/etc/rancher/k3s", paths.conf_mount().display()),
        "--volume".into(),
        format!("{}:{}", paths.images().display(), Loader::K3S_IMAGES_DIR),
        "--publish".into(),
        format!("127.0.0.1:{api_port}:{KUBE_SECURE_PORT}"),
        image.into(),
    ];
    args.extend(server_args());
    args
}

/// Removes the container and its anonymous volumes (k3s declares some for its state).
pub fn delete_args(name: &str) -> Vec<String> {
    vec![
        "rm".into(),
        "--force".into(),
        "--volumes".into(),
        name.into(),
    ]
}

/// A k3s container: removed when it stops or is dropped, unless detached.
pub type K3sCluster = CliCluster;

fn tool(cli: ProviderCli) -> Tool {
    Tool {
        cli,
        delete: delete_args,
        // Replaced by the cluster's images directory once its work directory exists.
        loader: |_| Loader::K3sImagesDir {
            dir: Loader::K3S_IMAGES_DIR.into(),
        },
    }
}

/// Starts the container, writes a kubeconfig for the host and waits for the node.
/// Why k3s did not give a cluster.
#[derive(Debug, thiserror::Error)]
pub enum K3sError {
    #[error(
        "cannot start k3s ({image}); it needs a Docker daemon on this machine that runs \
         privileged containers: {source}"
    )]
    Start {
        image: String,
        source: super::cli::tool::ToolError,
    },
    #[error("k3s wrote no kubeconfig at {}", .0.display())]
    NoKubeconfig(std::path::PathBuf),
    #[error("reading k3s's kubeconfig {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("k3s kubeconfig: {0}")]
    Kubeconfig(#[source] crate::kubeconfig::KubeconfigError),
    #[error("the k3s node is not Ready in time: {0}")]
    NodeNotReady(String),
}

impl From<K3sError> for ClusterError {
    fn from(e: K3sError) -> Self {
        ClusterError::Provider(Box::new(e))
    }
}

pub async fn up(opts: K3sOptions) -> Result<K3sCluster, ClusterError> {
    create(DOCKER, opts).await
}

async fn create(cli: ProviderCli, opts: K3sOptions) -> Result<K3sCluster, ClusterError> {
    let started = Instant::now();
    let mut cluster = CliCluster::prepare(tool(cli), opts.work_dir.as_deref(), opts.detached)?;
    let paths = K3sPaths {
        dir: cluster.work_dir().to_path_buf(),
    };
    for dir in [paths.conf_mount(), paths.images()] {
        std::fs::create_dir_all(&dir).map_err(|e| work_dirs::io(&dir, e))?;
    }
    // A kubeconfig left in a given work_dir by an earlier run would be read as this one's.
    let _ = std::fs::remove_file(paths.conf_mount().join("k3s.yaml"));
    cluster.set_loader(Loader::K3sImagesDir {
        dir: paths.images(),
    });
    let api_port = crate::ports::free_ports(1).map_err(ClusterError::NoFreePorts)?[0];
    let image = opts.image();
    cluster
        .create(run_args(cluster.name(), &image, &paths, api_port), &image)
        .await
        .map_err(|source| K3sError::Start {
            image: image.clone(),
            source,
        })?;
    let deadline = started + opts.startup_timeout;
    let written = read_k3s_kubeconfig(&paths, deadline).await?;
    let kubeconfig =
        set_server(&written, &server_url("127.0.0.1", api_port)).map_err(K3sError::Kubeconfig)?;
    work_dirs::write_private(cluster.kubeconfig(), &kubeconfig)?;
    wait_node_ready(
        &client_from_kubeconfig(cluster.kubeconfig()).await?,
        deadline,
    )
    .await?;
    cluster.keep_running(opts.detached);
    tracing::info!(
        "k3s cluster {} ready in {:.1}s",
        cluster.name(),
        started.elapsed().as_secs_f64()
    );
    Ok(cluster)
}

/// k3s writes its kubeconfig early, but not before the container is created.
async fn read_k3s_kubeconfig(paths: &K3sPaths, deadline: Instant) -> Result<String, K3sError> {
    let path = paths.conf_mount().join("k3s.yaml");
    let path = path.as_path();
    poll::until(
        deadline.saturating_duration_since(Instant::now()),
        Duration::from_millis(200),
        move || async move {
            match std::fs::read_to_string(path) {
                Ok(text) if !text.trim().is_empty() => Ok(Look::Ready(text)),
                Ok(_) => Ok(Look::NotYet("empty".into())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    Ok(Look::NotYet("absent".into()))
                }
                Err(source) => Err(K3sError::Read {
                    path: path.to_path_buf(),
                    source,
                }),
            }
        },
        |_| K3sError::NoKubeconfig(path.to_path_buf()),
    )
    .await
}

/// The API server may still refuse connections for a moment after k3s writes its kubeconfig.
async fn wait_node_ready(client: &kube::Client, deadline: Instant) -> Result<(), K3sError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = &nodes;
    poll::until(
        deadline.saturating_duration_since(Instant::now()),
        Duration::from_millis(500),
        move || async move {
            Ok(match nodes.list(&ListParams::default()).await {
                Ok(list) if list.items.iter().any(crate::nodes::is_ready) => Look::Ready(()),
                Ok(list) => Look::NotYet(format!("{} nodes, none Ready", list.items.len())),
                Err(e) => Look::NotYet(e.to_string()),
            })
        },
        K3sError::NodeNotReady,
    )
    .await
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn image_references_split_into_name_and_tag() {
        for (image, name, tag) in [
            ("rancher/k3s:v1.36.3-k3s1", "rancher/k3s", "v1.36.3-k3s1"),
            ("rancher/k3s", "rancher/k3s", "latest"),
            ("localhost:5000/k3s:dev", "localhost:5000/k3s", "dev"),
            ("localhost:5000/k3s", "localhost:5000/k3s", "latest"),
            ("k3s:v1", "k3s", "v1"),
        ] {
            assert_eq!(
                split_image(image),
                (name.to_string(), tag.to_string()),
                "{image}"
            );
        }
    }

    #[test]
    fn the_default_image_runs_the_pinned_kubernetes() {
        let (name, tag) = split_image(&K3sOptions::default().image());
        assert_eq!(name, "rancher/k3s");
        assert_eq!(tag, format!("{}-k3s1", toolchain::KUBERNETES));
    }

    #[test]
    fn the_server_labels_its_node_as_the_system_node_and_runs_without_traefik() {
        assert_eq!(
            server_args().join(" "),
            "server --snapshotter=native --disable=traefik --node-label=awconf.dev/system=true \
             --kubelet-arg=sync-frequency=5s"
        );
    }

    #[test]
    fn the_host_reaches_the_api_server_on_the_mapped_port() {
        for (host, port, url) in [
            ("127.0.0.1", 32771, "https://127.0.0.1:32771"),
            ("localhost", 40000, "https://localhost:40000"),
            ("[::1]", 1, "https://[::1]:1"),
        ] {
            assert_eq!(server_url(host, port), url);
        }
    }

    #[test]
    fn each_cluster_has_its_own_mounts_under_its_directory() {
        let paths = K3sPaths {
            dir: PathBuf::from("/tmp/awconf-7-0-k3s"),
        };
        for (path, expected) in [
            (paths.conf_mount(), "/tmp/awconf-7-0-k3s/etc-rancher-k3s"),
            (paths.images(), "/tmp/awconf-7-0-k3s/images"),
            (paths.kubeconfig(), "/tmp/awconf-7-0-k3s/kubeconfig.yaml"),
        ] {
            assert_eq!(path, Path::new(expected));
        }
    }

    #[test]
    fn command_lines() {
        let paths = K3sPaths {
            dir: PathBuf::from("/tmp/awconf-7-ab-docker"),
        };
        for (args, expected) in [
            (
                run_args("awconf-7-0", "rancher/k3s:v1.36.3-k3s1", &paths, 6550),
                "docker run --detach --name awconf-7-0 --privileged --userns=host \
                 --env K3S_KUBECONFIG_MODE=644 \
                 --volume /tmp/awconf-7-ab-docker/etc-rancher-k3s:/etc/rancher/k3s \
                 --volume /tmp/awconf-7-ab-docker/images:/var/lib/rancher/k3s/agent/images \
                 --publish 127.0.0.1:6550:6443 rancher/k3s:v1.36.3-k3s1 \
                 server --snapshotter=native --disable=traefik \
                 --node-label=awconf.dev/system=true --kubelet-arg=sync-frequency=5s",
            ),
            (
                delete_args("awconf-7-0"),
                "docker rm --force --volumes awconf-7-0",
            ),
        ] {
            assert_eq!(DOCKER.command_line(&args), expected);
        }
    }

    #[tokio::test]
    async fn a_container_that_writes_no_kubeconfig_is_removed_with_its_files() {
        let bin = tempfile::tempdir().unwrap();
        let fake = crate::providers::cli::tool::fake::FakeCli::new(bin.path(), "0123abcd", 0);
        let opts = K3sOptions {
            startup_timeout: Duration::from_millis(300),
            ..K3sOptions::default()
        };
        let err = match create(fake.cli, opts).await {
            Ok(_) => panic!("a container that wrote no kubeconfig came up"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("k3s wrote no kubeconfig"), "{err}");
        let calls = fake.calls();
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert!(
            calls[0].starts_with("run --detach --name awconf-"),
            "{calls:?}"
        );
        let name = calls[0].split_whitespace().nth(3).unwrap();
        assert_eq!(calls[1], format!("rm --force --volumes {name}"));
        let mount = calls[0]
            .split_whitespace()
            .find(|w| w.ends_with(":/etc/rancher/k3s"))
            .unwrap();
        let work_dir = Path::new(mount.trim_end_matches(":/etc/rancher/k3s"))
            .parent()
            .unwrap();
        assert!(!work_dir.exists(), "{} is left behind", work_dir.display());
    }

    #[tokio::test]
    async fn the_kubeconfig_is_read_once_k3s_has_written_it() {
        let dir = tempfile::tempdir().unwrap();
        let paths = K3sPaths {
            dir: dir.path().to_path_buf(),
        };
        std::fs::create_dir_all(paths.conf_mount()).unwrap();
        let soon = Instant::now() + Duration::from_millis(300);
        assert!(read_k3s_kubeconfig(&paths, soon).await.is_err());
        std::fs::write(paths.conf_mount().join("k3s.yaml"), "apiVersion: v1\n").unwrap();
        let later = Instant::now() + Duration::from_secs(5);
        assert_eq!(
            read_k3s_kubeconfig(&paths, later).await.unwrap(),
            "apiVersion: v1\n"
        );
    }
}
