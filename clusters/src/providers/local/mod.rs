//! The embedded cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
//! run as host processes from the pinned binaries.

pub mod audit;
pub mod commands;
mod error;
pub mod node;
mod restart;
pub use restart::ControlPlanePart;
mod shared;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use commands::{Ports, Reach};
pub use error::LocalError;
use node::{NodeSetup, RealNode};

use crate::cluster::{Capabilities, Cluster, ClusterError};
use crate::health;
use crate::nodes::{self, NodeShape};
use crate::pki::{self, Ca};
use crate::process::{Process, log_tail, resident_bytes};
use crate::toolchain::{self, Component};

pub use shared::{release as release_shared, shared, shared_at};

pub use crate::work_dirs::remove_work_dir;
use crate::work_dirs::{io, write_private as write};

/// How to bring up a local cluster.
#[derive(Clone, Debug)]
pub struct LocalOptions {
    pub nodes: usize,
    /// Kubelet nodes with containerd beside the fake ones: 0 or 1 (one per machine).
    pub real_nodes: usize,
    pub gpus_per_node: u32,
    /// The API server writes an audit log of every request, at this detail (see [`audit`]);
    /// by default with every AppWrapper write's object, which the invariant monitor reads.
    pub audit: Option<audit::Detail>,
    /// The cluster's files; a fresh temporary directory when `None`.
    pub work_dir: Option<PathBuf>,
    /// Leave the processes running when this value is dropped (`cluster up --detach`).
    pub detached: bool,
    pub cache: PathBuf,
    /// The Kubernetes release of the control plane (and of a real node's kubelet).
    pub kubernetes: String,
    /// The API server is also reached at this address of the host, from a network namespace
    /// ([`crate::netns::Netns::host_address`]); see [`LocalCluster::kubeconfig_at`].
    pub namespace_reach: Option<Ipv4Addr>,
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            nodes: 2,
            real_nodes: 0,
            gpus_per_node: 8,
            audit: Some(audit::Detail::default()),
            work_dir: None,
            detached: false,
            cache: toolchain::cache_dir(),
            kubernetes: toolchain::KUBERNETES.to_string(),
            namespace_reach: None,
        }
    }
}

/// What `cluster status` and `cluster down` read back for a detached cluster.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct State {
    pub ports: Ports,
    pub pids: Vec<(String, u32)>,
    #[serde(default)]
    pub node: Option<node::NodeState>,
}

pub struct LocalCluster {
    work_dir: PathBuf,
    kubeconfig: PathBuf,
    ports: Ports,
    /// In start order; stopped in reverse.
    processes: Vec<Process>,
    /// How each component of the control plane was started, to start it again in place.
    launches: Vec<restart::Launch>,
    /// Stopped first: its teardown needs none of the other processes.
    node: Option<RealNode>,
    reach: Reach,
    remove_work_dir: bool,
    detached: bool,
    kubernetes: String,
    audit: Option<audit::Detail>,
}

/// The real node's address, after checking that this machine can run one.
fn real_node_address(real_nodes: usize) -> Result<Option<Ipv4Addr>, ClusterError> {
    match real_nodes {
        0 => Ok(None),
        1 => {
            node::prerequisites::check().map_err(LocalError::NoRealNode)?;
            let ip = crate::host::address().map_err(|e| LocalError::NoRealNode(e.to_string()))?;
            Ok(Some(ip))
        }
        n => Err(LocalError::TooManyRealNodes(n).into()),
    }
}

impl LocalCluster {
    /// Builds missing binaries, starts every component, and waits until nodes are Ready.
    pub async fn up(opts: LocalOptions) -> Result<Self, ClusterError> {
        let started = Instant::now();
        let node_ip = real_node_address(opts.real_nodes)?;
        let reach = match (node_ip, opts.namespace_reach) {
            (Some(ip), _) => Reach::RealNode(ip),
            (None, Some(ip)) => Reach::Namespace(ip),
            (None, None) => Reach::Loopback,
        };
        let cache = opts.cache.clone();
        let mut components = Component::control_plane(&opts.kubernetes);
        if node_ip.is_some() {
            components.push(Component::kubernetes_node(&opts.kubernetes));
        }
        tokio::task::spawn_blocking(move || toolchain::build_all(&components, &cache))
            .await
            .map_err(|e| LocalError::Setup(format!("building the binaries: {e}")))??;
        let (work_dir, remove_work_dir) = match &opts.work_dir {
            Some(dir) => {
                crate::work_dirs::create_named_work_dir(dir)?;
                (dir.clone(), false)
            }
            None => (fresh_work_dir(&opts.cache)?, !opts.detached),
        };
        let ports = allocate_ports()?;
        let mut cluster = Self {
            kubeconfig: work_dir.join("kubeconfig.yaml"),
            work_dir,
            ports,
            processes: Vec::new(),
            launches: Vec::new(),
            node: None,
            reach,
            remove_work_dir,
            // Set once up: a start that fails half-way stops what it started.
            detached: false,
            kubernetes: opts.kubernetes.clone(),
            audit: opts.audit,
        };
        cluster.write_files(opts.audit.unwrap_or_default())?;
        cluster.start_components(&opts).await?;
        let client = cluster.client().await?;
        nodes::create_fake_nodes(&client, opts.nodes, &NodeShape::gpu(opts.gpus_per_node)).await?;
        nodes::wait_schedulable(&client, opts.nodes, Duration::from_secs(60)).await?;
        if let Some(node_ip) = node_ip {
            let setup = NodeSetup {
                work_dir: cluster.work_dir.clone(),
                cache: opts.cache.clone(),
                node_ip,
                apiserver_port: cluster.ports.apiserver,
                detached: opts.detached,
                tainted: opts.nodes > 0,
                kubernetes: opts.kubernetes.clone(),
            };
            cluster.node = Some(RealNode::start(setup, &client).await?);
        }
        cluster.write_state()?;
        cluster.detached = opts.detached;
        tracing::info!(
            "local cluster ready in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        Ok(cluster)
    }

    fn write_files(&self, audit: audit::Detail) -> Result<(), ClusterError> {
        let w = &self.work_dir;
        for dir in ["pki", "logs", "etcd", "kwok-home"] {
            let dir = w.join(dir);
            crate::owner_only::create_dir(&dir).map_err(|e| io(&dir, e))?;
        }
        let pki_dir = w.join("pki");
        let ca = Ca::generate()?;
        ca.pair.write(&pki_dir, "ca")?;
        let mut ips = vec![IpAddr::V4(Ipv4Addr::new(10, 96, 0, 1))];
        if let Reach::RealNode(ip) | Reach::Namespace(ip) = self.reach {
            ips.push(IpAddr::V4(ip));
        }
        ca.serving(
            "kube-apiserver",
            &[
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
            &ips,
        )?
        .write(&pki_dir, "apiserver")?;
        ca.client("kube-admin", Some("system:masters"))?
            .write(&pki_dir, "admin")?;
        ca.client(commands::FRONT_PROXY_CLIENT, None)?
            .write(&pki_dir, "front-proxy-client")?;
        let (sa_private, sa_public) = pki::service_account_key()?;
        write(&pki_dir.join("sa.key"), &sa_private)?;
        write(&pki_dir.join("sa.pub"), &sa_public)?;
        let kubeconfig = commands::kubeconfig(w, &self.ports).map_err(LocalError::Setup)?;
        write(&self.kubeconfig, &kubeconfig)?;
        write(&w.join("kwok.yaml"), &commands::kwok_config())?;
        write(&audit::policy_path(w), &audit::policy(audit))?;
        Ok(())
    }

    async fn start_components(&mut self, opts: &LocalOptions) -> Result<(), ClusterError> {
        let w = self.work_dir.clone();
        let cache = &opts.cache;
        let kube = Component::kubernetes(&opts.kubernetes);
        let pki_dir = w.join("pki");
        let read =
            |name: &str| std::fs::read_to_string(pki_dir.join(name)).map_err(|e| io(&pki_dir, e));
        let admin = health::admin_http(
            &read("ca.crt")?,
            &(read("admin.crt")? + &read("admin.key")?),
        )?;
        let insecure = health::insecure_http()?;
        let p = self.ports;

        let etcd = Component::etcd().binary(cache, "etcd");
        self.start("etcd", &etcd, commands::etcd(&w, &p), &[], opts.detached)?;
        self.wait(
            "etcd",
            &admin,
            &format!("http://127.0.0.1:{}/health", p.etcd),
            20,
        )
        .await?;

        let apiserver = kube.binary(cache, "kube-apiserver");
        let mut apiserver_args = commands::apiserver(&w, &p, self.reach);
        if opts.audit.is_some() {
            apiserver_args.extend(audit::apiserver_args(&w));
        }
        self.start(
            "kube-apiserver",
            &apiserver,
            apiserver_args,
            &[],
            opts.detached,
        )?;
        self.wait(
            "kube-apiserver",
            &admin,
            &format!("https://127.0.0.1:{}/readyz", p.apiserver),
            90,
        )
        .await?;

        let kcm = kube.binary(cache, "kube-controller-manager");
        self.start(
            "kube-controller-manager",
            &kcm,
            commands::controller_manager(&w, &p, self.reach),
            &[],
            opts.detached,
        )?;
        let scheduler = kube.binary(cache, "kube-scheduler");
        self.start(
            "kube-scheduler",
            &scheduler,
            commands::scheduler(&w, &p),
            &[],
            opts.detached,
        )?;
        // kwok serves the fake nodes; without any it stays off, so that a KWOK installed
        // into the cluster is the only one.
        let kwok = Component::kwok().binary(cache, "kwok");
        let home = [("HOME", w.join("kwok-home").display().to_string())];
        if opts.nodes > 0 {
            self.start("kwok", &kwok, commands::kwok(&w, &p), &home, opts.detached)?;
        }

        self.wait(
            "kube-controller-manager",
            &insecure,
            &format!("https://127.0.0.1:{}/healthz", p.controller_manager),
            60,
        )
        .await?;
        self.wait(
            "kube-scheduler",
            &insecure,
            &format!("https://127.0.0.1:{}/readyz", p.scheduler),
            60,
        )
        .await?;
        if opts.nodes > 0 {
            self.wait(
                "kwok",
                &insecure,
                &format!("http://127.0.0.1:{}/healthz", p.kwok),
                60,
            )
            .await?;
        }
        Ok(())
    }

    fn start(
        &mut self,
        name: &str,
        binary: &Path,
        args: Vec<String>,
        envs: &[(&str, String)],
        detached: bool,
    ) -> Result<(), ClusterError> {
        let log = self.work_dir.join("logs").join(format!("{name}.log"));
        let process =
            Process::start(name, binary, &args, envs, &log, detached).map_err(|source| {
                LocalError::Start {
                    name: name.to_string(),
                    binary: binary.to_path_buf(),
                    source,
                }
            })?;
        self.processes.push(process);
        self.launches
            .push(restart::Launch::new(name, binary, args, envs, detached));
        Ok(())
    }

    /// Waits for the process started as `name` to answer `url`; its exit ends the wait, and a
    /// timeout shows its log.
    async fn wait(
        &mut self,
        name: &str,
        http: &reqwest::Client,
        url: &str,
        secs: u64,
    ) -> Result<(), ClusterError> {
        let Some(process) = self.processes.iter_mut().find(|p| p.name == name) else {
            return Err(LocalError::Setup(format!("no process {name} to wait for")).into());
        };
        health::wait_ready(process, http, url, Duration::from_secs(secs)).await?;
        Ok(())
    }

    fn write_state(&self) -> Result<(), ClusterError> {
        let state = State {
            ports: self.ports,
            pids: self.pids(),
            node: self.node.as_ref().map(RealNode::state),
        };
        write_state_file(&self.work_dir, &state)
    }

    /// Records a process started beside the cluster (Kueue) so `cluster down` stops it first.
    pub fn record_process(&self, name: &str, pid: u32) -> Result<(), ClusterError> {
        let mut state = read_state(&self.work_dir)?;
        state.pids.push((name.to_string(), pid));
        write_state_file(&self.work_dir, &state)
    }

    /// The Kubernetes release its control plane runs.
    /// A kubeconfig for programs in the network namespace the cluster was made reachable from
    /// ([`LocalOptions::namespace_reach`]), written beside the cluster's own.
    pub fn kubeconfig_at(&self) -> Result<PathBuf, ClusterError> {
        let Reach::Namespace(ip) = self.reach else {
            return Err(LocalError::Setup(
                "the cluster was not made reachable from a network namespace".into(),
            )
            .into());
        };
        let text = commands::kubeconfig(&self.work_dir, &self.ports)
            .map_err(LocalError::Setup)?
            .replace("https://127.0.0.1:", &format!("https://{ip}:"));
        let path = self.work_dir.join(format!("kubeconfig-{ip}.yaml"));
        write(&path, &text)?;
        Ok(path)
    }

    pub fn kubernetes(&self) -> &str {
        &self.kubernetes
    }

    pub fn work_dir(&self) -> &Path {
        &self.work_dir
    }

    pub fn ports(&self) -> Ports {
        self.ports
    }

    pub fn pids(&self) -> Vec<(String, u32)> {
        let mut pids: Vec<_> = self
            .processes
            .iter()
            .map(|p| (p.name.clone(), p.pid()))
            .collect();
        pids.extend(self.node.iter().flat_map(RealNode::pids));
        pids
    }

    /// The real node, when the cluster has one.
    pub fn real_node(&self) -> Option<&RealNode> {
        self.node.as_ref()
    }

    /// Resident memory of each component, in bytes.
    pub fn resident_memory(&self) -> Vec<(String, u64)> {
        self.pids()
            .into_iter()
            .map(|(name, pid)| (name, resident_bytes(pid).unwrap_or(0)))
            .collect()
    }

    /// The API server's audit log, written when the cluster was started with `audit`.
    pub fn audit_log_path(&self) -> PathBuf {
        audit::log_path(&self.work_dir)
    }

    /// The audit log, when it holds every AppWrapper write with the object it left (by
    /// default): the invariant monitor's source.
    pub fn appwrapper_audit_log(&self) -> Option<PathBuf> {
        self.audit
            .is_some_and(audit::logs_appwrapper_writes)
            .then(|| self.audit_log_path())
    }

    /// Where etcd answers clients (plain HTTP on the loopback).
    pub fn etcd_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.etcd)
    }

    pub fn log_path(&self, component: &str) -> PathBuf {
        self.work_dir.join("logs").join(format!("{component}.log"))
    }

    pub fn log_tail(&self, component: &str, lines: usize) -> String {
        log_tail(&self.log_path(component), lines)
    }

    /// Adds a process that belongs to the cluster (Kueue, a controller), stopped before the
    /// control plane at teardown.
    pub fn adopt(&mut self, process: Process) {
        self.processes.push(process);
    }

    /// Stops and forgets the adopted process called `name`.
    pub fn stop_process(&mut self, name: &str) -> bool {
        let Some(index) = self.processes.iter().position(|p| p.name == name) else {
            return false;
        };
        let mut process = self.processes.remove(index);
        process.stop(Duration::from_secs(10));
        true
    }

    fn shutdown(&mut self) {
        if let Some(mut node) = self.node.take() {
            node.stop();
        }
        while let Some(mut process) = self.processes.pop() {
            process.stop(Duration::from_secs(10));
        }
        if self.remove_work_dir {
            remove_work_dir(&self.work_dir);
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        if self.detached {
            // Process::drop would stop them: hand the children over to `cluster down`.
            for process in std::mem::take(&mut self.processes) {
                std::mem::forget(process);
            }
            // The node forgets its own processes when detached.
            drop(self.node.take());
        } else {
            self.shutdown();
        }
    }
}

#[async_trait::async_trait]
impl Cluster for LocalCluster {
    fn name(&self) -> &str {
        "local"
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            simulated_pod_outcomes: true,
            fake_gpu_nodes: true,
            restartable_control_plane: true,
        }
    }

    async fn stop(&mut self) -> Result<(), ClusterError> {
        self.detached = false;
        self.shutdown();
        Ok(())
    }
}

/// Stops a detached cluster from its state file (`awconf cluster down`).
pub fn down(work_dir: &Path, cache: &Path) -> Result<Vec<String>, ClusterError> {
    let state = read_state(work_dir)?;
    let mut stopped = Vec::new();
    let mut node_errors = Vec::new();
    if let Some(node) = &state.node {
        stopped.extend(
            node.pids
                .iter()
                .filter(|(_, pid)| crate::process::is_alive(*pid))
                .map(|(name, _)| name.clone()),
        );
        node_errors = node::teardown_detached(work_dir, cache, node);
    }
    for (name, pid) in state.pids.iter().rev() {
        if crate::process::is_alive(*pid) {
            crate::process::stop_pid(*pid, Duration::from_secs(10));
            stopped.push(name.clone());
        }
    }
    if !node_errors.is_empty() {
        // Kept: what is left under it may still be mounted.
        return Err(LocalError::NodeLeft {
            errors: node_errors,
            work_dir: work_dir.to_path_buf(),
        }
        .into());
    }
    remove_work_dir(work_dir);
    Ok(stopped)
}

/// How images reach the real node of the local cluster whose kubeconfig this is, if it is one
/// with a real node (its state file lies beside the kubeconfig).
pub fn image_loader_for(kubeconfig: &Path) -> Option<crate::images::Loader> {
    let work_dir = kubeconfig.parent()?;
    read_state(work_dir).ok()?.node?;
    Some(crate::images::Loader::Containerd {
        address: node::config::NodePaths::new(work_dir).containerd_socket(),
    })
}

pub fn read_state(work_dir: &Path) -> Result<State, ClusterError> {
    let path = work_dir.join("state.json");
    let text = std::fs::read_to_string(&path).map_err(|_| LocalError::NoState(path.clone()))?;
    serde_json::from_str(&text).map_err(|source| LocalError::BadState { path, source }.into())
}

fn write_state_file(work_dir: &Path, state: &State) -> Result<(), ClusterError> {
    let path = work_dir.join("state.json");
    let json = serde_json::to_string_pretty(state).map_err(|source| LocalError::BadState {
        path: path.clone(),
        source,
    })?;
    Ok(write(&path, &json)?)
}

fn allocate_ports() -> Result<Ports, ClusterError> {
    let p = crate::ports::free_ports(6).map_err(ClusterError::NoFreePorts)?;
    Ok(Ports {
        etcd: p[0],
        etcd_peer: p[1],
        apiserver: p[2],
        controller_manager: p[3],
        scheduler: p[4],
        kwok: p[5],
    })
}

/// `awconf-<pid>-<random>`, mode 0700: a name no other user can take first.
fn fresh_work_dir(cache: &Path) -> Result<PathBuf, ClusterError> {
    remove_stale_work_dirs(cache);
    Ok(crate::work_dirs::create_work_dir("")?)
}

/// Work directories of test processes that died without cleaning up (their pid is gone).
fn remove_stale_work_dirs(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let pid = name
            .strip_prefix("awconf-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !crate::process::is_alive(pid)
        {
            // A real node's mounts must go before its files.
            if node::needs_cleanup(&entry.path()) {
                node::clean_stale(&entry.path(), cache);
            }
            remove_work_dir(&entry.path());
        }
    }
}
