//! A kind cluster, through the `kind` command-line tool.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::cli::{CliCluster, ProviderCli, Tool};
use crate::cluster::{Cluster, ClusterError};
use crate::images::load::Loader;
use crate::system_node::SYSTEM_NODE_LABEL;
use crate::work_dirs;

pub const KIND_VERSION: &str = "v0.32.0";

/// The Kubernetes v1.36 node image kind v0.32.0 was released with, by digest: its default,
/// `pkg/apis/config/defaults/image.go` at the tag (v1.36.1; kind's source names no image of
/// the pinned v1.36.3). kind builds node images for some patch versions only and supports
/// each with the kind release it was built for, by digest.
pub const NODE_IMAGE: &str =
    "kindest/node:v1.36.1@sha256:3489c7674813ba5d8b1a9977baea8a6e553784dab7b84759d1014dbd78f7ebd5";

pub const KIND: ProviderCli = ProviderCli {
    program: "kind",
    install: "go install sigs.k8s.io/kind@v0.32.0",
};

/// kind's default, and apart from the real node's pod network.
pub const DEFAULT_POD_SUBNET: &str = "10.244.0.0/16";

#[derive(Clone, Debug)]
pub struct KindOptions {
    /// [`NODE_IMAGE`] when `None`.
    pub node_image: Option<String>,
    /// Worker nodes besides the control plane; with none, the control plane runs everything.
    pub workers: usize,
    pub pod_subnet: String,
    /// How long `kind create cluster` waits for the control plane to be Ready.
    pub wait: Duration,
    /// The cluster's files (kind config, kubeconfig); a fresh temporary directory when `None`.
    pub work_dir: Option<PathBuf>,
    /// Leave the cluster running when this value is dropped.
    /// Give `work_dir` too to keep its kubeconfig: the local provider sweeps the temporary
    /// directories of processes that are gone.
    pub detached: bool,
}

impl Default for KindOptions {
    fn default() -> Self {
        Self {
            node_image: None,
            workers: 0,
            pod_subnet: DEFAULT_POD_SUBNET.into(),
            wait: Duration::from_secs(180),
            work_dir: None,
            detached: false,
        }
    }
}

impl KindOptions {
    pub fn node_image(&self) -> String {
        self.node_image
            .clone()
            .unwrap_or_else(|| NODE_IMAGE.to_string())
    }
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct KindConfig {
    kind: &'static str,
    api_version: &'static str,
    name: String,
    networking: Networking,
    nodes: Vec<KindNode>,
    kubeadm_config_patches: Vec<String>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Networking {
    pod_subnet: String,
}

#[derive(serde::Serialize)]
struct KindNode {
    role: &'static str,
    image: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: BTreeMap<String, String>,
}

/// The kind config: one control plane and `workers` workers, all from the same node image.
/// The system label goes to the first worker; without workers, to the control plane (kind
/// leaves a control plane untainted only when it is the only node).
/// Why kind could not be given a cluster.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    #[error("rendering the kind config: {0}")]
    Config(String),
}

impl From<KindError> for ClusterError {
    fn from(e: KindError) -> Self {
        ClusterError::Provider(Box::new(e))
    }
}

pub fn config(name: &str, opts: &KindOptions) -> Result<String, KindError> {
    let image = opts.node_image();
    let system_node = if opts.workers == 0 { 0 } else { 1 };
    let nodes = (0..=opts.workers)
        .map(|i| KindNode {
            role: if i == 0 { "control-plane" } else { "worker" },
            image: image.clone(),
            labels: if i == system_node {
                BTreeMap::from([(
                    SYSTEM_NODE_LABEL.0.to_string(),
                    SYSTEM_NODE_LABEL.1.to_string(),
                )])
            } else {
                BTreeMap::new()
            },
        })
        .collect();
    let config = KindConfig {
        kind: "Cluster",
        api_version: "kind.x-k8s.io/v1alpha4",
        name: name.to_string(),
        networking: Networking {
            pod_subnet: opts.pod_subnet.clone(),
        },
        nodes,
        kubeadm_config_patches: vec![format!(
            "kind: KubeletConfiguration\nsyncFrequency: {}\n",
            super::KUBELET_SYNC_FREQUENCY
        )],
    };
    serde_saphyr::to_string(&config).map_err(|e| KindError::Config(e.to_string()))
}

pub fn create_args(name: &str, config: &Path, kubeconfig: &Path, wait: Duration) -> Vec<String> {
    vec![
        "create".into(),
        "cluster".into(),
        "--name".into(),
        name.into(),
        "--config".into(),
        config.display().to_string(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--wait".into(),
        format!("{}s", wait.as_secs()),
    ]
}

pub fn delete_args(name: &str) -> Vec<String> {
    vec![
        "delete".into(),
        "cluster".into(),
        "--name".into(),
        name.into(),
    ]
}

/// A kind cluster: deleted when it stops or is dropped, unless detached.
pub type KindCluster = CliCluster;

fn tool(cli: ProviderCli) -> Tool {
    Tool {
        cli,
        delete: delete_args,
        loader: |cluster| Loader::Kind { cluster },
    }
}

/// Creates a cluster with a name of its own and waits for its control plane.
pub async fn up(opts: KindOptions) -> Result<KindCluster, ClusterError> {
    create(KIND, opts).await
}

async fn create(cli: ProviderCli, opts: KindOptions) -> Result<KindCluster, ClusterError> {
    let mut cluster = CliCluster::prepare(tool(cli), opts.work_dir.as_deref(), opts.detached)?;
    let config_path = cluster.work_dir().join("kind.yaml");
    work_dirs::write_private(&config_path, &config(cluster.name(), &opts)?)?;
    let args = create_args(
        cluster.name(),
        &config_path,
        cluster.kubeconfig(),
        opts.wait,
    );
    cluster.create(args, &opts.node_image()).await?;
    cluster.keep_running(opts.detached);
    Ok(cluster)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::cli::tool::fake::FakeCli;

    fn parse(text: &str) -> serde_json::Value {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn the_config_labels_the_node_that_runs_the_system() {
        let image = NODE_IMAGE;
        let system = serde_json::json!({"awconf.dev/system": "true"});
        for (workers, nodes) in [
            (
                0,
                serde_json::json!([
                    {"role": "control-plane", "image": image, "labels": system},
                ]),
            ),
            (
                1,
                serde_json::json!([
                    {"role": "control-plane", "image": image},
                    {"role": "worker", "image": image, "labels": system},
                ]),
            ),
            (
                2,
                serde_json::json!([
                    {"role": "control-plane", "image": image},
                    {"role": "worker", "image": image, "labels": system},
                    {"role": "worker", "image": image},
                ]),
            ),
        ] {
            let opts = KindOptions {
                workers,
                ..KindOptions::default()
            };
            let config = parse(&config("awconf-1-0", &opts).unwrap());
            assert_eq!(
                config,
                serde_json::json!({
                    "kind": "Cluster",
                    "apiVersion": "kind.x-k8s.io/v1alpha4",
                    "name": "awconf-1-0",
                    "networking": {"podSubnet": "10.244.0.0/16"},
                    "nodes": nodes,
                    "kubeadmConfigPatches": ["kind: KubeletConfiguration\nsyncFrequency: 5s\n"],
                }),
                "{workers} workers"
            );
        }
    }

    #[test]
    fn the_node_image_and_pod_subnet_can_be_overridden() {
        for (node_image, pod_subnet, image) in [
            (None, "10.244.0.0/16", NODE_IMAGE.to_string()),
            (
                Some("kindest/node:v1.36.1@sha256:3489".to_string()),
                "10.250.0.0/16",
                "kindest/node:v1.36.1@sha256:3489".to_string(),
            ),
        ] {
            let opts = KindOptions {
                node_image,
                pod_subnet: pod_subnet.into(),
                ..KindOptions::default()
            };
            let config = parse(&config("n", &opts).unwrap());
            assert_eq!(config["nodes"][0]["image"], image.as_str());
            assert_eq!(config["networking"]["podSubnet"], pod_subnet);
        }
    }

    #[test]
    fn the_default_node_image_runs_the_pinned_kubernetes_minor_by_digest() {
        let minor = crate::toolchain::KUBERNETES.rsplit_once('.').unwrap().0;
        assert_eq!(minor, "v1.36");
        let image = KindOptions::default().node_image();
        let (name, digest) = image.split_once("@sha256:").unwrap();
        assert!(
            name.starts_with(&format!("kindest/node:{minor}.")),
            "{image}"
        );
        assert!(
            digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()),
            "{image}"
        );
    }

    #[test]
    fn command_lines() {
        for (args, expected) in [
            (
                create_args(
                    "awconf-7-0",
                    Path::new("/w/kind.yaml"),
                    Path::new("/w/kubeconfig.yaml"),
                    Duration::from_secs(180),
                ),
                "kind create cluster --name awconf-7-0 --config /w/kind.yaml \
                 --kubeconfig /w/kubeconfig.yaml --wait 180s",
            ),
            (
                delete_args("awconf-7-0"),
                "kind delete cluster --name awconf-7-0",
            ),
        ] {
            assert_eq!(KIND.command_line(&args), expected);
        }
    }

    #[test]
    fn a_missing_kind_says_how_to_install_the_pinned_version() {
        assert!(
            KIND.missing()
                .to_string()
                .contains("go install sigs.k8s.io/kind@v0.32.0")
        );
        assert!(KIND.install.ends_with(KIND_VERSION));
    }

    #[tokio::test]
    async fn the_cluster_is_deleted_once_on_stop_and_its_files_go() {
        let bin = tempfile::tempdir().unwrap();
        let fake = FakeCli::new(bin.path(), "", 0);
        let mut cluster = create(fake.cli, KindOptions::default()).await.unwrap();
        let (name, work_dir) = (cluster.name().to_string(), cluster.work_dir().to_path_buf());
        assert!(work_dir.join("kind.yaml").exists());
        cluster.stop().await.unwrap();
        cluster.stop().await.unwrap();
        drop(cluster);
        let calls = fake.calls();
        assert_eq!(calls.len(), 2, "{calls:?}");
        let w = work_dir.display();
        assert_eq!(
            calls[0],
            format!(
                "create cluster --name {name} --config {w}/kind.yaml \
                 --kubeconfig {w}/kubeconfig.yaml --wait 180s"
            )
        );
        assert_eq!(calls[1], format!("delete cluster --name {name}"));
        assert!(!work_dir.exists());
    }

    #[tokio::test]
    async fn dropping_deletes_the_cluster_unless_it_is_detached() {
        for (detached, create_status, deleted) in [
            (false, 0, true),
            (true, 0, false),
            // kind may leave nodes behind when it fails half-way.
            (false, 1, true),
            (true, 1, true),
        ] {
            let bin = tempfile::tempdir().unwrap();
            let fake = FakeCli::new(bin.path(), "", create_status);
            let opts = KindOptions {
                detached,
                work_dir: Some(bin.path().join("cluster")),
                ..KindOptions::default()
            };
            let up = create(fake.cli, opts).await;
            assert_eq!(up.is_ok(), create_status == 0);
            drop(up);
            let calls = fake.calls();
            assert_eq!(
                calls
                    .last()
                    .is_some_and(|c| c.starts_with("delete cluster --name awconf-")),
                deleted,
                "detached {detached}, create exits {create_status}: {calls:?}"
            );
        }
    }

    #[test]
    fn the_workflows_install_the_same_kind_and_node_image() {
        let ours = include_str!("../../../ci/providers.yml");
        let users = include_str!("../../../ci/github-actions.yml");
        for workflow in [ours, users] {
            assert!(workflow.contains(&format!("KIND_VERSION: {KIND_VERSION}\n")));
        }
        // The user's job creates its kind cluster itself; awconf's run creates it with NODE_IMAGE.
        assert!(users.contains(&format!("KIND_NODE_IMAGE: {NODE_IMAGE}\n")));
        assert!(users.contains("--image \"$KIND_NODE_IMAGE\""));
        // The same release binary, by the same checksum.
        let checksum = |w: &str| {
            w.lines()
                .find_map(|l| l.trim().strip_prefix("KIND_SHA256: "))
                .map(str::to_string)
        };
        assert!(checksum(ours).is_some_and(|c| c.len() == 64));
        assert_eq!(checksum(ours), checksum(users));
    }
}
