//! `awconf cluster up | down | status | load-image`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use clusters::kueue::{Kueue, KueueHost};
use clusters::providers::local::{self, LocalCluster, LocalOptions};
use clusters::{Cluster, images, toolchain};

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Start an embedded cluster; it stays up until Ctrl-C, or with --detach until `cluster down`.
    Up(UpArgs),
    /// Stop a detached cluster.
    Down(NameArg),
    /// Show a detached cluster's components and kubeconfig.
    Status(NameArg),
    /// Turn a binary into an image and load it into the detached cluster's real node.
    LoadImage(LoadImageArgs),
}

#[derive(Args)]
pub struct LoadImageArgs {
    /// The binary; a dynamically linked one brings the libraries ldd finds.
    #[arg(long)]
    binary: PathBuf,
    /// The image reference pods name (with imagePullPolicy: Never), e.g. awconf.local/controller:dev.
    #[arg(long)]
    image: String,
    #[command(flatten)]
    name: NameArg,
}

#[derive(Args)]
pub struct UpArgs {
    /// Number of fake nodes.
    #[arg(long, default_value_t = 2)]
    nodes: usize,
    /// Real nodes (kubelet, containerd, CNI, kube-proxy on this machine, as root): 0 or 1.
    #[arg(long, default_value_t = 0)]
    real_nodes: usize,
    /// nvidia.com/gpu capacity of each fake node.
    #[arg(long, default_value_t = 8)]
    gpus_per_node: u32,
    /// The Kubernetes release of the control plane (and of a real node's kubelet).
    #[arg(long, value_name = "VERSION", default_value = toolchain::KUBERNETES, value_parser = toolchain::kubernetes_release)]
    kubernetes: String,
    /// Also run this Kueue version (for example v0.19.2).
    #[arg(long, value_name = "VERSION", num_args = 0..=1, default_missing_value = toolchain::KUEUE_DEFAULT)]
    kueue: Option<String>,
    /// Leave the cluster running and return; stop it with `awconf cluster down`.
    #[arg(long)]
    detach: bool,
    #[command(flatten)]
    name: NameArg,
}

#[derive(Args)]
pub struct NameArg {
    /// Name of the cluster; its files live in $AWCONF_CACHE/clusters/<name>.
    #[arg(long, default_value = "awconf")]
    name: String,
}

impl NameArg {
    fn dir(&self) -> PathBuf {
        toolchain::cache_dir().join("clusters").join(&self.name)
    }
}

impl ClusterCommand {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            ClusterCommand::Up(args) => up(args).await,
            ClusterCommand::Down(name) => {
                let stopped = local::down(&name.dir(), &toolchain::cache_dir())?;
                println!("stopped {} ({})", name.name, stopped.join(", "));
                Ok(ExitCode::SUCCESS)
            }
            ClusterCommand::Status(name) => status(&name),
            ClusterCommand::LoadImage(args) => load_image(&args),
        }
    }
}

async fn up(args: UpArgs) -> anyhow::Result<ExitCode> {
    let dir = args.name.dir();
    if dir.join("state.json").exists() {
        let alive = local::read_state(&dir)?
            .pids
            .iter()
            .any(|(_, pid)| clusters::process::is_alive(*pid));
        anyhow::ensure!(
            !alive,
            "cluster {:?} is already up (kubeconfig {}); stop it with `awconf cluster down --name {}`",
            args.name.name,
            dir.join("kubeconfig.yaml").display(),
            args.name.name
        );
    }
    // A real node left by a run that died goes before its files do.
    if local::node::needs_cleanup(&dir) {
        local::node::clean_stale(&dir, &toolchain::cache_dir());
    }
    local::remove_work_dir(&dir);
    std::fs::create_dir_all(&dir)?;
    let started = std::time::Instant::now();
    eprintln!("starting the embedded cluster in {}", dir.display());
    let cluster = LocalCluster::up(LocalOptions {
        nodes: args.nodes,
        real_nodes: args.real_nodes,
        gpus_per_node: args.gpus_per_node,
        work_dir: Some(dir.clone()),
        detached: args.detach,
        kubernetes: args.kubernetes.clone(),
        ..LocalOptions::default()
    })
    .await
    .inspect_err(|_| local::remove_work_dir(&dir))?;
    eprintln!(
        "control plane ready in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    if let Some(node) = cluster.real_node() {
        eprintln!(
            "real node {} ({}) ready; its start took {:.1}s",
            node.name,
            node.ip,
            node.started_in.as_secs_f64()
        );
    }
    let kueue = match &args.kueue {
        Some(version) => {
            let host = KueueHost {
                work_dir: dir.clone(),
                kubeconfig: cluster.kubeconfig().to_path_buf(),
                cache: toolchain::cache_dir(),
                detached: args.detach,
            };
            let source =
                clusters::kueue::KueueSource::release(version).map_err(anyhow::Error::msg)?;
            let kueue = Kueue::start(host, &source).await?;
            if let Some(pid) = kueue.pid() {
                cluster.record_process("kueue", pid)?;
            }
            eprintln!(
                "Kueue {version} ready in {:.1}s",
                started.elapsed().as_secs_f64()
            );
            Some(kueue)
        }
        None => None,
    };
    println!("{}", cluster.kubeconfig().display());
    if args.detach {
        eprintln!(
            "detached; use: export KUBECONFIG={}; stop with: awconf cluster down",
            cluster.kubeconfig().display()
        );
        std::mem::forget(kueue);
        drop(cluster);
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "export KUBECONFIG={}   (Ctrl-C stops the cluster)",
        cluster.kubeconfig().display()
    );
    tokio::signal::ctrl_c().await?;
    eprintln!("stopping");
    drop(kueue);
    drop(cluster);
    local::remove_work_dir(&dir);
    Ok(ExitCode::SUCCESS)
}

fn load_image(args: &LoadImageArgs) -> anyhow::Result<ExitCode> {
    let dir = args.name.dir();
    let state = local::read_state(&dir)?;
    anyhow::ensure!(
        state.node.is_some(),
        "cluster {:?} has no real node (start it with --real-nodes 1)",
        args.name.name
    );
    let image = images::binary_image(&args.image, &args.binary)?;
    let file = args.image.replace(['/', ':'], "_");
    let written = images::write(&image, &dir.join("node").join("images"), &file)?;
    let socket = local::node::config::NodePaths::new(&dir).containerd_socket();
    images::Loader::Containerd { address: socket }.load(&written.path)?;
    println!("{} ({})", args.image, written.config_digest);
    Ok(ExitCode::SUCCESS)
}

fn status(name: &NameArg) -> anyhow::Result<ExitCode> {
    let dir = name.dir();
    let state = local::read_state(&dir)?;
    println!("cluster {} in {}", name.name, dir.display());
    println!("kubeconfig: {}", dir.join("kubeconfig.yaml").display());
    println!(
        "kube-apiserver: https://127.0.0.1:{}",
        state.ports.apiserver
    );
    let mut all_up = true;
    for (component, pid) in &state.pids {
        let alive = clusters::process::is_alive(*pid);
        all_up &= alive;
        println!(
            "  {component:<24} pid {pid:<8} {}",
            if alive { "running" } else { "gone" }
        );
    }
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
