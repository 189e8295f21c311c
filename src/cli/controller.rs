//! `awconf controller`: what users need to deploy our controller themselves.

use std::process::ExitCode;

use clap::Subcommand;
use clusters::install::controller::manifests::{self, Settings};

/// The image `controller manifests` names when no `--image` is given: what the Dockerfile at
/// the repository's root builds (`docker build -t awconf/appwrapper-controller:<version> .`).
pub fn default_image() -> String {
    format!("awconf/appwrapper-controller:{}", env!("CARGO_PKG_VERSION"))
}

#[derive(Subcommand)]
pub enum ControllerCommand {
    /// Print install.yaml: the reference operator's release objects (namespace
    /// appwrapper-system, the same names, roles no wider) running our controller.
    Manifests {
        /// The controller's image.
        #[arg(long)]
        image: Option<String>,
    },
}

impl ControllerCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            ControllerCommand::Manifests { image } => {
                let image = image.unwrap_or_else(default_image);
                let objects = manifests::render(&Settings::release(&image));
                print!(
                    "{}",
                    manifests::to_yaml(&objects).map_err(anyhow::Error::msg)?
                );
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}
