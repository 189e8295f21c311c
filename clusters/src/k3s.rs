//! k3s in one privileged container, through testcontainers. Needs a Docker daemon on this
//! machine: the kubeconfig and image directories are bind mounts of our own directories.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use testcontainers_modules::k3s::{K3s, KUBE_SECURE_PORT};
use testcontainers_modules::testcontainers::core::Mount;
use testcontainers_modules::testcontainers::runners::AsyncRunner;
use testcontainers_modules::testcontainers::{ContainerAsync, ImageExt};

use crate::cluster::{Cluster, ClusterError};
use crate::images::load::Loader;
use crate::kubeconfig::set_server;
use crate::scratch;
use crate::system_node::system_node_label;
use crate::toolchain;

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

pub struct K3sCluster {
    name: String,
    paths: K3sPaths,
    kubeconfig: PathBuf,
    container: Option<ContainerAsync<K3s>>,
    remove_work_dir: bool,
    detached: bool,
}

impl K3sCluster {
    /// Starts the container, writes a kubeconfig for the host and waits for the node.
    pub async fn up(opts: K3sOptions) -> Result<Self, ClusterError> {
        let started = Instant::now();
        let name = scratch::next_cluster_name();
        let (dir, remove_work_dir) = match &opts.work_dir {
            Some(dir) => {
                scratch::create_named_work_dir(dir)?;
                (dir.clone(), false)
            }
            None => (scratch::create_work_dir("k3s")?, !opts.detached),
        };
        let paths = K3sPaths { dir };
        for dir in [paths.conf_mount(), paths.images()] {
            std::fs::create_dir_all(&dir).map_err(|e| scratch::io(&dir, e))?;
        }
        // A kubeconfig left in a given work_dir by an earlier run would be read as this one's.
        let _ = std::fs::remove_file(paths.conf_mount().join("k3s.yaml"));
        let mut cluster = Self {
            kubeconfig: paths.kubeconfig(),
            name,
            paths,
            container: None,
            remove_work_dir,
            // Set once up: a start that fails half-way removes the container.
            detached: false,
        };
        let image = opts.image();
        tracing::info!("starting k3s container {} from {image}", cluster.name);
        let (image_name, tag) = split_image(&image);
        let container = K3s::default()
            .with_conf_mount(cluster.paths.conf_mount())
            .with_name(image_name)
            .with_tag(tag)
            .with_cmd(server_args())
            .with_mount(Mount::bind_mount(
                cluster.paths.images().display().to_string(),
                Loader::K3S_IMAGES_DIR,
            ))
            .with_privileged(true)
            .with_userns_mode("host")
            .with_container_name(&cluster.name)
            .with_startup_timeout(opts.startup_timeout)
            .start()
            .await
            .map_err(|e| {
                ClusterError::Other(format!(
                    "cannot start k3s ({image}); it needs a Docker daemon on this machine that \
                     runs privileged containers: {e}"
                ))
            })?;
        let port = container
            .get_host_port_ipv4(KUBE_SECURE_PORT)
            .await
            .map_err(|e| ClusterError::Other(format!("k3s API port: {e}")))?;
        let host = container
            .get_host()
            .await
            .map_err(|e| ClusterError::Other(format!("k3s host: {e}")))?
            .to_string();
        cluster.container = Some(container);
        let deadline = started + opts.startup_timeout;
        let written = read_k3s_kubeconfig(&cluster.paths, deadline).await?;
        let kubeconfig = set_server(&written, &server_url(&host, port))
            .map_err(|e| ClusterError::Other(format!("k3s kubeconfig: {e}")))?;
        scratch::write_private(&cluster.kubeconfig, &kubeconfig)?;
        wait_node_ready(&cluster.client().await?, deadline).await?;
        cluster.detached = opts.detached;
        tracing::info!(
            "k3s cluster {} ready in {:.1}s",
            cluster.name,
            started.elapsed().as_secs_f64()
        );
        Ok(cluster)
    }

    /// Where images for this cluster are loaded.
    pub fn loader(&self) -> Loader {
        Loader::K3sImagesDir {
            dir: self.paths.images(),
        }
    }

    pub fn work_dir(&self) -> &Path {
        &self.paths.dir
    }

    fn remove_files(&self) {
        if self.remove_work_dir {
            scratch::remove_work_dir(&self.paths.dir);
        }
    }
}

/// k3s writes its kubeconfig early, but not before the container is created.
async fn read_k3s_kubeconfig(paths: &K3sPaths, deadline: Instant) -> Result<String, ClusterError> {
    let path = paths.conf_mount().join("k3s.yaml");
    loop {
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => return Ok(text),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(scratch::io(&path, e)),
        }
        if Instant::now() >= deadline {
            return Err(ClusterError::Other(format!(
                "k3s wrote no kubeconfig at {}",
                path.display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The API server may still refuse connections for a moment after k3s logs that it is up.
async fn wait_node_ready(client: &kube::Client, deadline: Instant) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    loop {
        let last = match nodes.list(&ListParams::default()).await {
            Ok(list) if list.items.iter().any(crate::nodes::is_ready) => return Ok(()),
            Ok(list) => format!("{} nodes, none Ready", list.items.len()),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(ClusterError::Other(format!(
                "the k3s node is not Ready in time: {last}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Testcontainers removes a container on drop through the async runtime, which a drop after
/// the runtime is gone (a panic unwinding out of `main`) does not have.
fn remove_container(container: ContainerAsync<K3s>) {
    if tokio::runtime::Handle::try_current().is_ok() {
        drop(container);
        return;
    }
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(async move { drop(container) }),
        Err(e) => {
            tracing::warn!(
                "k3s container {} is left behind: no runtime to remove it: {e}",
                container.id()
            );
            std::mem::forget(container);
        }
    }
}

impl Drop for K3sCluster {
    fn drop(&mut self) {
        if self.detached {
            // Dropping it would remove the container.
            std::mem::forget(self.container.take());
            return;
        }
        if let Some(container) = self.container.take() {
            remove_container(container);
        }
        self.remove_files();
    }
}

#[async_trait::async_trait]
impl Cluster for K3sCluster {
    fn name(&self) -> &str {
        &self.name
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    async fn stop(&mut self) -> Result<(), ClusterError> {
        self.detached = false;
        if let Some(container) = self.container.take() {
            container.rm().await.map_err(|e| {
                ClusterError::Other(format!("cannot remove k3s container {}: {e}", self.name))
            })?;
        }
        self.remove_files();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
            "server --snapshotter=native --disable=traefik --node-label=awconf.dev/system=true"
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
