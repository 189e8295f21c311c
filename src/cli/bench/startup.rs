//! `awconf bench` alone: warm start-up time of the embedded cluster and its idle memory.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use clusters::providers::local::{LocalCluster, LocalOptions};

#[derive(Args)]
pub struct StartupArgs {
    /// How many times to bring the cluster up.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// How long the cluster idles before its memory is read.
    #[arg(long, default_value_t = 10)]
    idle_seconds: u64,
}

impl StartupArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        anyhow::ensure!(self.runs > 0, "--runs must be at least 1");
        let mut times = Vec::new();
        let mut memory = Vec::new();
        for run in 1..=self.runs {
            let started = Instant::now();
            let cluster = LocalCluster::up(LocalOptions::default()).await?;
            let elapsed = started.elapsed();
            println!(
                "run {run}: cluster up and nodes Ready in {:.2}s",
                elapsed.as_secs_f64()
            );
            times.push(elapsed);
            if run == self.runs {
                tokio::time::sleep(Duration::from_secs(self.idle_seconds)).await;
                memory = cluster.resident_memory();
            }
            drop(cluster);
        }
        times.sort();
        println!(
            "warm cluster up: median {:.2}s, min {:.2}s, max {:.2}s over {} runs",
            times[times.len() / 2].as_secs_f64(),
            times[0].as_secs_f64(),
            times[times.len() - 1].as_secs_f64(),
            times.len()
        );
        let total: u64 = memory.iter().map(|(_, bytes)| bytes).sum();
        println!("idle resident memory after {}s:", self.idle_seconds);
        for (name, bytes) in &memory {
            println!("  {name:<24} {}", crate::cli::toolchain::human_size(*bytes));
        }
        println!(
            "  {:<24} {}",
            "total",
            crate::cli::toolchain::human_size(total)
        );
        Ok(ExitCode::SUCCESS)
    }
}
