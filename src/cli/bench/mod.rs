//! `awconf bench`: the embedded cluster's start-up (alone), `load` and `chaos`.

mod chaos;
mod common;
mod load;
mod startup;

use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    startup: startup::StartupArgs,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// A seeded load of AppWrappers through Kueue: latencies, throughput, the controller's
    /// memory, CPU and API requests, invariant violations, leftovers.
    Load(load::LoadArgs),
    /// The same load while the controller and Kueue are SIGKILLed at seeded moments; fails
    /// unless everything ends, nothing is left and no invariant breaks.
    Chaos(chaos::ChaosArgs),
}

impl BenchArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            None => self.startup.run().await,
            Some(BenchCommand::Load(args)) => args.run().await,
            Some(BenchCommand::Chaos(args)) => args.run().await,
        }
    }
}
