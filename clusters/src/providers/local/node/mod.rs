//! A real node beside the embedded control plane: containerd, the kubelet and kube-proxy as
//! host processes, pods on a CNI bridge, images imported from archives. Started, health-checked
//! and torn down like the other components; teardown also removes what they leave behind.

mod claim;
pub mod cleanup;
pub mod config;
mod error;
pub mod prerequisites;
mod sysctls;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

use self::config::{NodePaths, NodePorts};
pub use self::error::NodeError;
use crate::cluster::ClusterError;
use crate::images::{self, Loader};
use crate::pki::Ca;
use crate::poll::{self, Look};
use crate::process::Process;
use crate::toolchain::{self, Component};

pub use config::{POD_SUBNET, REAL_NODE_LABEL, REAL_NODE_TAINT};

/// The real node's name (one per machine).
pub const NODE_NAME: &str = "real-node-0";

/// What a real node needs from the cluster it joins.
#[derive(Clone, Debug)]
pub struct NodeSetup {
    pub work_dir: PathBuf,
    pub cache: PathBuf,
    pub node_ip: Ipv4Addr,
    pub apiserver_port: u16,
    pub detached: bool,
    /// Tainted when fake nodes share the cluster (see [`config::kubelet`]).
    pub tainted: bool,
    /// The Kubernetes release of the control plane, which the kubelet matches.
    pub kubernetes: String,
}

/// What `cluster down` needs to tear a detached node down.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NodeState {
    pub name: String,
    pub ip: Ipv4Addr,
    pub ports: NodePorts,
    pub pids: Vec<(String, u32)>,
}

pub struct RealNode {
    pub name: String,
    pub ip: Ipv4Addr,
    /// From the first file written to the node reported Ready.
    pub started_in: Duration,
    paths: NodePaths,
    ports: NodePorts,
    work_dir: PathBuf,
    /// containerd, kubelet, kube-proxy.
    processes: Vec<Process>,
    kube_proxy: PathBuf,
    detached: bool,
    stopped: bool,
}

/// The node's certificates: the kubelet serves on the node IP and presents a node identity to
/// the API server (Node authorizer); kube-proxy is `system:kube-proxy` (bound to
/// `system:node-proxier` by the default RBAC policy).
fn write_certificates(paths: &NodePaths, ca: &Ca, ip: Ipv4Addr) -> Result<(), ClusterError> {
    let pki = paths.pki();
    ca.serving(NODE_NAME, &[NODE_NAME], &[IpAddr::V4(ip)])?
        .write(&pki, "kubelet")?;
    ca.client(&format!("system:node:{NODE_NAME}"), Some("system:nodes"))?
        .write(&pki, "kubelet-client")?;
    ca.client("system:kube-proxy", None)?
        .write(&pki, "kube-proxy")?;
    Ok(())
}

impl RealNode {
    /// Claims the machine, writes the node's files, starts containerd with the sandbox and
    /// busybox images, then the kubelet and kube-proxy, and waits until the node is Ready.
    pub async fn start(setup: NodeSetup, client: &kube::Client) -> Result<Self, ClusterError> {
        let started = Instant::now();
        let paths = NodePaths::new(&setup.work_dir);
        take_claim(&setup)?;
        let kube_proxy =
            Component::kubernetes_node(&setup.kubernetes).binary(&setup.cache, "kube-proxy");
        let ports = allocate_ports()?;
        let mut node = Self {
            name: NODE_NAME.to_string(),
            ip: setup.node_ip,
            started_in: Duration::ZERO,
            paths,
            ports,
            work_dir: setup.work_dir.clone(),
            processes: Vec::new(),
            kube_proxy,
            // Set once Ready: a start that fails half-way tears down what it started.
            detached: false,
            stopped: false,
        };
        // On failure `node` is dropped here, which tears down whatever started.
        node.write_files(&setup)?;
        sysctls::snapshot(&node.paths.sysctls()).map_err(NodeError::Setup)?;
        node.start_containerd(&setup).await?;
        node.import_images(&setup).await?;
        node.start_kubelet(&setup).await?;
        node.start_kube_proxy(&setup).await?;
        wait_node_ready(client, NODE_NAME, Duration::from_secs(120)).await?;
        node.started_in = started.elapsed();
        node.detached = setup.detached;
        tracing::info!(
            "real node {NODE_NAME} ready in {:.1}s",
            node.started_in.as_secs_f64()
        );
        Ok(node)
    }

    fn write_files(&self, setup: &NodeSetup) -> Result<(), ClusterError> {
        let paths = &self.paths;
        for dir in paths.dirs() {
            std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        }
        let cluster_pki = setup.work_dir.join("pki");
        let ca = Ca::load(&cluster_pki, "ca")?;
        write_certificates(paths, &ca, setup.node_ip)?;
        let ca_crt = cluster_pki.join("ca.crt");
        let server = format!("https://127.0.0.1:{}", setup.apiserver_port);
        let runc = installed("runc")?;
        let kubelet_kubeconfig =
            config::kubeconfig(&server, &ca_crt, &paths.pki(), "kubelet-client")
                .map_err(NodeError::Setup)?;
        let kube_proxy_kubeconfig =
            config::kubeconfig(&server, &ca_crt, &paths.pki(), "kube-proxy")
                .map_err(NodeError::Setup)?;
        let files = [
            (
                paths.containerd_config(),
                config::containerd(paths, &runc, &images::pause_reference()),
            ),
            (
                paths.cni_conf_dir().join("10-awconf.conflist"),
                config::cni_conflist(paths),
            ),
            (
                paths.kubelet_config(),
                config::kubelet(paths, &self.ports, setup.node_ip, &ca_crt, setup.tainted),
            ),
            (paths.kubelet_kubeconfig(), kubelet_kubeconfig),
            (
                paths.kube_proxy_config(),
                config::kube_proxy(paths, &self.ports, NODE_NAME),
            ),
            (paths.kube_proxy_kubeconfig(), kube_proxy_kubeconfig),
        ];
        for (path, text) in files {
            crate::owner_only::write(&path, text).map_err(|e| io(&path, e))?;
        }
        Ok(())
    }

    fn spawn(
        &mut self,
        name: &str,
        binary: &Path,
        args: Vec<String>,
        setup: &NodeSetup,
    ) -> Result<(), ClusterError> {
        let log = setup.work_dir.join("logs").join(format!("{name}.log"));
        let envs = [("PATH", config::NODE_PATH.to_string())];
        let process =
            Process::start(name, binary, &args, &envs, &log, setup.detached).map_err(|source| {
                NodeError::Start {
                    name: name.to_string(),
                    binary: binary.to_path_buf(),
                    source,
                }
            })?;
        self.processes.push(process);
        self.record_claim();
        Ok(())
    }

    async fn start_containerd(&mut self, setup: &NodeSetup) -> Result<(), ClusterError> {
        let containerd = installed("containerd")?;
        let args = vec![format!(
            "--config={}",
            self.paths.containerd_config().display()
        )];
        self.spawn("containerd", &containerd, args, setup)?;
        let this = std::sync::Mutex::new(&mut *self);
        let this = &this;
        let node = || this.lock().unwrap_or_else(|e| e.into_inner());
        poll::until(
            Duration::from_secs(30),
            Duration::from_millis(100),
            move || async move {
                let paths = {
                    let mut node = node();
                    node.fail_if_exited()?;
                    node.paths.clone()
                };
                let answers =
                    tokio::task::spawn_blocking(move || cleanup::containerd_answers(&paths))
                        .await
                        .unwrap_or(false);
                Ok(if answers {
                    Look::Ready(())
                } else {
                    Look::NotYet(String::new())
                })
            },
            |_| node().not_ready("containerd", "its socket did not answer `ctr version`"),
        )
        .await
    }

    /// The sandbox image (pause, compiled from the pinned Kubernetes source) and busybox.
    async fn import_images(&self, setup: &NodeSetup) -> Result<(), ClusterError> {
        let cache = setup.cache.clone();
        let dir = self.paths.images();
        let loader = Loader::Containerd {
            address: self.paths.containerd_socket(),
        };
        tokio::task::spawn_blocking(move || -> Result<(), images::ImageError> {
            let pause = images::pause_binary(&cache)?;
            let pause = images::write(
                &images::pause_image(&images::pause_reference(), &pause),
                &dir,
                "pause",
            )?;
            loader.load(&pause.path)?;
            let busybox = images::busybox_image(images::BUSYBOX_IMAGE, Path::new(images::BUSYBOX))?;
            loader.load(&images::write(&busybox, &dir, "busybox")?.path)?;
            Ok(())
        })
        .await
        .map_err(|e| NodeError::Images(e.to_string()))?
        .map_err(|e| NodeError::Images(e.to_string()).into())
    }

    async fn start_kubelet(&mut self, setup: &NodeSetup) -> Result<(), ClusterError> {
        let kubelet = Component::kubernetes_node(&setup.kubernetes).binary(&setup.cache, "kubelet");
        let args = config::kubelet_args(&self.paths, NODE_NAME, setup.node_ip);
        self.spawn("kubelet", &kubelet, args, setup)?;
        let url = format!("http://127.0.0.1:{}/healthz", self.ports.kubelet_healthz);
        self.wait_last(&url, 60).await
    }

    async fn start_kube_proxy(&mut self, setup: &NodeSetup) -> Result<(), ClusterError> {
        let binary = self.kube_proxy.clone();
        self.spawn(
            "kube-proxy",
            &binary,
            config::kube_proxy_args(&self.paths),
            setup,
        )?;
        let url = format!("http://127.0.0.1:{}/healthz", self.ports.kube_proxy_healthz);
        self.wait_last(&url, 60).await
    }

    async fn wait_last(&mut self, url: &str, secs: u64) -> Result<(), ClusterError> {
        let http = crate::health::insecure_http()?;
        let Some(process) = self.processes.last_mut() else {
            return Err(NodeError::Setup("no node process to wait for".into()).into());
        };
        crate::health::wait_ready(process, &http, url, Duration::from_secs(secs)).await?;
        Ok(())
    }

    fn fail_if_exited(&mut self) -> Result<(), ClusterError> {
        for process in &mut self.processes {
            if let Some(status) = process.exited() {
                return Err(NodeError::Exited {
                    name: process.name.clone(),
                    status: status.to_string(),
                    log: process.log.clone(),
                    tail: process.log_tail(20),
                }
                .into());
            }
        }
        Ok(())
    }

    fn not_ready(&self, name: &str, what: &str) -> ClusterError {
        let log = self.work_dir.join("logs").join(format!("{name}.log"));
        NodeError::NotReady {
            name: name.to_string(),
            what: what.to_string(),
            tail: crate::process::log_tail(&log, 20),
            log,
        }
        .into()
    }

    fn record_claim(&self) {
        let mut pids = vec![std::process::id()];
        pids.extend(self.processes.iter().map(|p| p.pid()));
        if let Err(e) = claim::write(&claim::Claim {
            work_dir: self.work_dir.clone(),
            pids,
        }) {
            tracing::warn!("cannot record the real node's claim: {e}");
        }
    }

    pub fn pids(&self) -> Vec<(String, u32)> {
        self.processes
            .iter()
            .map(|p| (p.name.clone(), p.pid()))
            .collect()
    }

    pub fn state(&self) -> NodeState {
        NodeState {
            name: self.name.clone(),
            ip: self.ip,
            ports: self.ports,
            pids: self.pids(),
        }
    }

    pub fn containerd_socket(&self) -> PathBuf {
        self.paths.containerd_socket()
    }

    /// Loads an image archive into the node's containerd.
    pub fn load_image(&self, archive: &Path) -> Result<(), images::ImageError> {
        Loader::Containerd {
            address: self.paths.containerd_socket(),
        }
        .load(archive)
    }

    /// Stops kube-proxy and the kubelet, removes every container, stops containerd and removes
    /// what the node left on the machine.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let mut processes = std::mem::take(&mut self.processes);
        let errors = teardown(&self.work_dir, &self.kube_proxy, |name| {
            if let Some(process) = processes.iter_mut().find(|p| p.name == name) {
                process.stop(Duration::from_secs(10));
            }
        });
        for error in errors {
            tracing::warn!("real node teardown: {error}");
        }
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        if self.detached {
            for process in std::mem::take(&mut self.processes) {
                std::mem::forget(process);
            }
        } else {
            self.stop();
        }
    }
}

/// Tears a node down in order; `stop` stops the named process (`kube-proxy`, `kubelet`,
/// `containerd`). Returns what is left on the machine: containerd or a shim going away on the
/// way is no error (the rest is removed without them), only a process, cgroup, mount or
/// machine setting that stays is.
pub fn teardown(work_dir: &Path, kube_proxy: &Path, mut stop: impl FnMut(&str)) -> Vec<String> {
    let paths = NodePaths::new(work_dir);
    let mut errors = Vec::new();
    // The bridge, iptables and kernel settings are the machine's: once another node has claimed
    // it (this one died and was cleaned up by its start), they are that node's.
    let owns_machine = claim::read().is_none_or(|c| c.work_dir == work_dir);
    stop("kube-proxy");
    if owns_machine {
        errors.extend(cleanup::remove_proxy_rules(kube_proxy).err());
    }
    stop("kubelet");
    let containers = cleanup::container_ids(&paths);
    let removed = cleanup::containerd_answers(&paths).then(|| cleanup::remove_containers(&paths));
    stop("containerd");
    // Whatever this leaves (a process, a cgroup, a mount) is found and removed below; these are
    // only the ways it came to be removed without containerd.
    let containerd_gone = match removed {
        Some(Ok(())) => false,
        Some(Err(e)) if e.failure == cleanup::CtrFailure::ContainerdGone => {
            tracing::warn!(
                "real node teardown: containerd went away while removing containers ({e}); \
                 removing the rest without it"
            );
            true
        }
        Some(Err(e)) => {
            tracing::warn!(
                "real node teardown: not every container was removed through containerd ({e}); \
                 killing what is left"
            );
            false
        }
        // Not running: the harness died, or containerd did.
        None => true,
    };
    if containerd_gone && let Err(e) = take_over_containers(&paths) {
        tracing::warn!("real node teardown: {e}; killing what is left");
    }
    errors.extend(cleanup::kill_shims(&paths).err());
    errors.extend(cleanup::remove_container_cgroups(&containers).err());
    errors.extend(cleanup::unmount_all(&paths.dir).err());
    if owns_machine {
        errors.extend(cleanup::remove_bridge().err());
        errors.extend(cleanup::remove_kubelet_rules().err());
        errors.extend(sysctls::restore(&paths.sysctls()).err());
        claim::release(work_dir);
    }
    errors
}

/// Removes the containers of a node whose containerd is gone while its shims still run (the
/// harness died, or containerd went away during teardown): a containerd on the same root and
/// state takes them over long enough to remove them.
fn take_over_containers(paths: &NodePaths) -> Result<(), String> {
    if cleanup::shim_pids(paths).is_empty() || !paths.containerd_config().is_file() {
        return Ok(());
    }
    let containerd = prerequisites::find_program("containerd")
        .ok_or_else(|| "containerd is not installed".to_string())?;
    let log = paths.dir.join("containerd-cleanup.log");
    let args = vec![format!("--config={}", paths.containerd_config().display())];
    let mut process = Process::start("containerd", &containerd, &args, &[], &log, false)
        .map_err(|e| format!("cannot start containerd to remove old containers: {e}"))?;
    poll::blocking_until(Duration::from_secs(20), Duration::from_millis(100), || {
        cleanup::containerd_answers(paths)
    });
    let result = cleanup::remove_containers(paths).map_err(|e| e.message);
    process.stop(Duration::from_secs(10));
    result
}

/// Tears down a detached node from its recorded pids (`awconf cluster down`).
pub fn teardown_detached(work_dir: &Path, cache: &Path, state: &NodeState) -> Vec<String> {
    let kube_proxy = cleanup_kube_proxy(cache);
    teardown(work_dir, &kube_proxy, |name| {
        if let Some((_, pid)) = state.pids.iter().find(|(n, _)| n == name) {
            crate::process::stop_pid(*pid, Duration::from_secs(10));
        }
    })
}

/// A kube-proxy to remove a node's rules with (`--cleanup` is the same in every release):
/// the default release's, else any release's in the cache.
fn cleanup_kube_proxy(cache: &Path) -> PathBuf {
    let default = Component::kubernetes_node(toolchain::KUBERNETES).binary(cache, "kube-proxy");
    if default.is_file() {
        return default;
    }
    let releases = Component::kubernetes_node(toolchain::KUBERNETES)
        .dir(cache)
        .parent()
        .and_then(|dir| std::fs::read_dir(dir).ok());
    releases
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("kube-proxy"))
        .find(|path| path.is_file())
        .unwrap_or(default)
}

/// Refuses to start beside a live real node; removes one left by a run that died.
fn take_claim(setup: &NodeSetup) -> Result<(), ClusterError> {
    if let Some(old) = claim::read() {
        if old.is_live() {
            return Err(NodeError::AlreadyRunning {
                work_dir: old.work_dir.clone(),
                bridge: config::BRIDGE,
            }
            .into());
        }
        clean_stale(&old.work_dir, &setup.cache);
    }
    claim::write(&claim::Claim {
        work_dir: setup.work_dir.clone(),
        pids: vec![std::process::id()],
    })
    .map_err(|e| NodeError::Setup(e).into())
}

/// Cleans up after a node whose processes are gone.
pub fn clean_stale(work_dir: &Path, cache: &Path) {
    let kube_proxy = cleanup_kube_proxy(cache);
    for error in teardown(work_dir, &kube_proxy, |_| {}) {
        tracing::warn!(
            "cleaning up the real node left in {}: {error}",
            work_dir.display()
        );
    }
}

/// Whether `work_dir` holds a node that was never torn down (mounts or shims left).
pub fn needs_cleanup(work_dir: &Path) -> bool {
    let paths = NodePaths::new(work_dir);
    paths.dir.is_dir()
        && (!crate::mounts::mounts_under(&paths.dir).is_empty()
            || !cleanup::shim_pids(&paths).is_empty()
            || cleanup::container_ids(&paths)
                .iter()
                .any(|id| !cleanup::container_cgroups(id).is_empty()))
}

fn allocate_ports() -> Result<NodePorts, ClusterError> {
    let p = crate::ports::free_ports(4).map_err(ClusterError::NoFreePorts)?;
    Ok(NodePorts {
        kubelet: p[0],
        kubelet_healthz: p[1],
        kube_proxy_healthz: p[2],
        kube_proxy_metrics: p[3],
    })
}

/// Waits until the node is Ready and the not-ready taint the API server adds at registration
/// is gone.
pub async fn wait_node_ready(
    client: &kube::Client,
    name: &str,
    timeout: Duration,
) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = &nodes;
    poll::until(
        timeout,
        Duration::from_millis(200),
        move || async move {
            Ok(match nodes.get_opt(name).await? {
                Some(node)
                    if crate::nodes::is_ready(&node)
                        && !crate::nodes::has_taint(&node, "node.kubernetes.io/not-ready") =>
                {
                    Look::Ready(())
                }
                _ => Look::NotYet(String::new()),
            })
        },
        |_| {
            NodeError::NodeNotReady {
                name: name.to_string(),
                seconds: timeout.as_secs(),
            }
            .into()
        },
    )
    .await
}

fn installed(program: &str) -> Result<PathBuf, ClusterError> {
    prerequisites::find_program(program).ok_or_else(|| {
        NodeError::NotInstalled {
            program: program.to_string(),
            install: prerequisites::INSTALL,
        }
        .into()
    })
}

fn io(path: &Path, source: std::io::Error) -> ClusterError {
    NodeError::Io {
        path: path.to_path_buf(),
        source,
    }
    .into()
}
