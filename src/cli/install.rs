//! `awconf install`: Kueue, KWOK and the controller into a cluster that is already up.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use clusters::images::Loader;
use clusters::install::{self, Part, Target};
use clusters::nodes::NodeShape;
use clusters::toolchain;

#[derive(Args)]
pub struct InstallArgs {
    /// The cluster's kubeconfig (default: kubectl's, from KUBECONFIG or ~/.kube/config).
    #[arg(long, env = "AWCONF_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current one).
    #[arg(long, env = "AWCONF_CONTEXT")]
    context: Option<String>,
    /// What to install: a comma-separated subset of kueue,kwok,controller.
    #[arg(long, default_value = "kueue,kwok,controller")]
    components: String,
    #[command(flatten)]
    kueue: crate::cli::kueue_source::KueueArgs,
    /// Fake nodes for KWOK to serve.
    #[arg(long, default_value_t = 2)]
    nodes: usize,
    /// nvidia.com/gpu capacity of each fake node.
    #[arg(long, default_value_t = 8)]
    gpus_per_node: u32,
    #[command(flatten)]
    images: ImageArgs,
    /// Also install the reference operator from its own release manifests (its module's
    /// `config/default`), running its pinned binary as the image, or --image.
    #[arg(long, value_name = "VERSION", num_args = 0..=1, default_missing_value = toolchain::APPWRAPPER_DEFAULT)]
    reference: Option<String>,
    /// With --reference: run our controller's image in the reference's manifests (the
    /// drop-in check).
    #[arg(long, requires = "reference")]
    ours: bool,
}

/// How the controller's image is chosen and how built images reach the nodes.
#[derive(Args, Clone)]
pub struct ImageArgs {
    /// Install the controller from this published image instead of building ours.
    #[arg(long)]
    pub image: Option<String>,
    #[command(flatten)]
    pub loader: LoaderArg,
}

#[derive(Args, Clone)]
pub struct LoaderArg {
    /// How images reach the nodes: containerd:SOCKET, kind:CLUSTER, k3d:CLUSTER or
    /// k3s-dir:DIRECTORY (found by itself for a local cluster with a real node).
    #[arg(long, env = "AWCONF_LOAD_IMAGES", value_name = "LOADER")]
    pub load_images: Option<Loader>,
}

impl ImageArgs {
    pub fn loader(&self, kubeconfig: &std::path::Path) -> anyhow::Result<Loader> {
        self.loader
            .load_images
            .clone()
            .or_else(|| clusters::providers::local::image_loader_for(kubeconfig))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "cannot tell how images reach this cluster's nodes: pass --load-images containerd:SOCKET, kind:CLUSTER, k3d:CLUSTER or k3s-dir:DIRECTORY"
                )
            })
    }
}

/// `appwrapper-controller` beside this executable (cargo builds both into one directory).
pub fn controller_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let binary = exe.with_file_name("appwrapper-controller");
    anyhow::ensure!(
        binary.is_file(),
        "{} not found: build it with `cargo build -p appwrapper-controller` (same profile as awconf), or pass --image",
        binary.display()
    );
    Ok(binary)
}

impl InstallArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let parts = install::parse_parts(&self.components).map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            self.reference.is_none() || !parts.contains(&Part::Controller),
            "--reference installs the controller; leave controller out of --components"
        );
        let source = self
            .kubeconfig
            .clone()
            .or_else(|| {
                clusters::kubeconfig::kubectl_default_paths()
                    .into_iter()
                    .next()
            })
            .unwrap_or_default();
        let cluster =
            clusters::ExistingCluster::connect(self.kubeconfig.clone(), self.context.clone())
                .await?;
        let client =
            clusters::cluster::client_from_kubeconfig(clusters::Cluster::kubeconfig(&cluster))
                .await?;
        let loader = self.images.loader(&source)?;
        let controller_binary = match (&self.images.image, parts.contains(&Part::Controller)) {
            (None, true) => Some(controller_binary()?),
            _ => None,
        };
        let work_dir = toolchain::cache_dir().join("install");
        let target = Target {
            client,
            loader,
            cache: toolchain::cache_dir(),
            work_dir,
        };
        let request = install::Request {
            parts,
            kueue: self.kueue.source(toolchain::KUEUE_DEFAULT)?,
            fake_nodes: self.nodes,
            node_shape: NodeShape::gpu(self.gpus_per_node),
            controller_binary,
            controller: install::controller::Settings::release(
                self.images.image.as_deref().unwrap_or_default(),
            ),
        };
        install::install(&target, &request, &|line| eprintln!("awconf: {line}")).await?;
        if let Some(version) = &self.reference {
            let image = match (self.ours, &self.images.image) {
                (true, _) => {
                    let binary = self::controller_binary()?;
                    let reference = install::controller::image_reference(&binary)?;
                    let image = clusters::images::binary_image_at(&reference, &binary, "/manager")?;
                    Some(target.load(image, "appwrapper-controller").await?)
                }
                (false, image) => image.clone(),
            };
            eprintln!(
                "awconf: installing the reference operator {version} from its release manifests{}",
                if self.ours {
                    ", running our controller"
                } else {
                    ""
                }
            );
            let took = install::reference::install(&target, version, image.as_deref()).await?;
            eprintln!(
                "awconf: reference manifests ready in {:.0}s",
                took.as_secs_f64()
            );
        }
        Ok(ExitCode::SUCCESS)
    }
}
