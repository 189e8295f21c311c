//! Command-line interface.

mod bench;
pub mod cargo_test;
mod cluster;
mod controller;
pub mod exit;
mod features;
mod install;
mod kueue_source;
mod listing;
mod matrix;
#[cfg(test)]
mod readme_tables;
mod report;
pub mod run;
mod toolchain;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "awconf",
    version,
    about = "AppWrapper controller conformance on real Kubernetes with Kueue",
    after_long_help = exit::help()
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the conformance suite: the main job.
    Run(Box<run::RunArgs>),
    /// Bring an embedded cluster up or down, or show it.
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Our controller's install manifests.
    #[command(subcommand)]
    Controller(controller::ControllerCommand),
    /// The built-in features: list them, write them out, or check yours.
    #[command(subcommand)]
    Features(features::FeaturesCommand),
    /// Install Kueue, KWOK and the controller into a cluster that is already up.
    Install(install::InstallArgs),
    /// The suite on every pair of Kueue and Kubernetes releases: a report per pair, the
    /// conformance matrix over them and a table of their counts.
    Matrix(Box<matrix::MatrixArgs>),
    /// Work with report directories: `compare` makes the conformance matrix of several runs.
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// Build or list the pinned Go binaries (kube-apiserver, etcd, kwok, Kueue).
    #[command(subcommand)]
    Toolchain(toolchain::ToolchainCommand),
    /// Print the AppWrapper CustomResourceDefinition as YAML.
    Crd,
    /// Measure: the embedded cluster's start-up and idle memory, or (`load`, `chaos`) a
    /// controller under a seeded load of AppWrappers, with and without crashes.
    Bench(bench::BenchArgs),
}

/// `awconf WORDS...` parsed, for the subcommands' tests.
#[cfg(test)]
pub(crate) fn parse_command(words: &[&str]) -> Result<Command, clap::Error> {
    Cli::try_parse_from(std::iter::once(&"awconf").chain(words)).map(|cli| cli.command)
}

impl Cli {
    pub fn is_run(&self) -> bool {
        matches!(self.command, Command::Run(_))
    }

    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::Run(r) => r.run().await,
            Command::Cluster(c) => c.run().await,
            Command::Install(i) => i.run().await,
            Command::Controller(c) => c.run(),
            Command::Matrix(m) => m.run(),
            Command::Report(c) => c.run(),
            Command::Features(c) => c.run(),
            Command::Toolchain(c) => c.run(),
            Command::Crd => {
                let crd = appwrapper_controller::crd::appwrapper_crd();
                print!("{}", serde_saphyr::to_string(&crd)?);
                Ok(ExitCode::SUCCESS)
            }
            Command::Bench(b) => b.run().await,
        }
    }
}
