//! Command-line interface.

mod args_alone;
mod bench;
pub mod cargo_test;
mod cluster;
mod controller;
pub mod exit;
mod features;
mod image;
mod install;
mod kueue_source;
mod listing;
mod matrix;
mod monitor_source;
#[cfg(test)]
mod readme_tables;
mod report;
pub mod run;
mod spec;
mod toolchain;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "awconf",
    version,
    long_version = long_version(),
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
    /// Write the runner image: awconf and every pinned binary a run needs, as an image
    /// archive for `docker load` or `ctr images import` (no Docker engine needed to build it).
    Image(image::ImageArgs),
    /// Install Kueue, KWOK and the controller into a cluster that is already up.
    Install(install::InstallArgs),
    /// The suite on every pair of Kueue and Kubernetes releases: a report per pair, the
    /// conformance matrix over them and a table of their counts.
    Matrix(Box<matrix::MatrixArgs>),
    /// Work with report directories: `compare` makes the conformance matrix of several runs,
    /// `summary` a run's results as Markdown for a CI job's summary.
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// Build or list the pinned Go binaries (kube-apiserver, etcd, kwok, Kueue).
    #[command(subcommand)]
    Toolchain(toolchain::ToolchainCommand),
    /// The specification: every behaviour of a conforming controller with the scenarios that
    /// check it (file:line), or the reason none does.
    Spec(spec::SpecArgs),
    /// Print the AppWrapper CustomResourceDefinition as YAML.
    Crd,
    /// Measure: the embedded cluster's start-up and idle memory, or (`load`, `chaos`) a
    /// controller under a seeded load of AppWrappers, with and without crashes.
    Bench(bench::BenchArgs),
}

/// `awconf --version`: this build and the releases it pins, so that a report can be tied to
/// what judged it.
fn long_version() -> &'static str {
    use clusters::toolchain::{
        APPWRAPPER_DEFAULT, ETCD, KUBERNETES, KUBERNETES_PINNED, KUEUE_DEFAULT, KUEUE_PINNED, KWOK,
    };
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}\nkueue {KUEUE_DEFAULT} (pinned: {})\nkubernetes {KUBERNETES} (pinned: {})\n\
             reference appwrapper operator {APPWRAPPER_DEFAULT}\netcd {ETCD}\nkwok {KWOK}",
            env!("CARGO_PKG_VERSION"),
            KUEUE_PINNED.join(", "),
            KUBERNETES_PINNED.join(", "),
        )
    });
    &TEXT
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
            Command::Image(i) => i.run(),
            Command::Controller(c) => c.run(),
            Command::Matrix(m) => m.run(),
            Command::Report(c) => c.run(),
            Command::Features(c) => c.run(),
            Command::Toolchain(c) => c.run(),
            Command::Spec(s) => s.run(),
            Command::Crd => {
                let crd = appwrapper_controller::crd::appwrapper_crd();
                print!("{}", serde_saphyr::to_string(&crd)?);
                Ok(ExitCode::SUCCESS)
            }
            Command::Bench(b) => b.run().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_long_version_names_the_pinned_releases() {
        let text = super::Cli::command().render_long_version();
        for pin in [
            clusters::toolchain::KUEUE_DEFAULT,
            clusters::toolchain::KUBERNETES,
            clusters::toolchain::APPWRAPPER_DEFAULT,
        ] {
            assert!(text.contains(pin), "{pin} not in {text}");
        }
        assert!(text.starts_with(&format!("awconf {}\n", env!("CARGO_PKG_VERSION"))));
    }
}
