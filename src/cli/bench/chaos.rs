//! `awconf bench chaos`: the load while the controller, Kueue, the API server and etcd are
//! killed and the controller's leader fails over; a verdict.

use std::process::ExitCode;

use awconf_bench::figures;
use awconf_bench::stand::Subject;
use clap::Args;

use super::common::{LoadFlags, controller_mode, write_json};

#[derive(Args)]
pub struct ChaosArgs {
    /// SIGKILLs in all, each of the controller or of Kueue.
    #[arg(long, default_value_t = 10)]
    kills: usize,
    /// Restarts of the local cluster's API server (SIGKILL, a pause, started again on the same
    /// etcd), among the kills.
    #[arg(long, value_name = "N", default_value_t = 0)]
    apiserver_restarts: usize,
    /// Restarts of the local cluster's etcd (SIGKILL, a pause, started again on its data),
    /// among the kills.
    #[arg(long, value_name = "N", default_value_t = 0)]
    etcd_restarts: usize,
    /// Failovers between two replicas of our controller electing a leader (with `--controller
    /// process`): the leader SIGKILLed, or frozen with SIGSTOP until the standby leads and then
    /// woken, when it must stop without acting; among the kills.
    #[arg(long, value_name = "N", default_value_t = 0)]
    failovers: usize,
    /// Pauses of the controller (SIGSTOP, a seeded 2 to 10 s, SIGCONT): cut off from the API
    /// server while Kueue works on; among the kills.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pauses: usize,
    #[command(flatten)]
    flags: LoadFlags,
    /// The controller under test: a process the bench can kill.
    #[arg(long, default_value = "process", value_parser = ["process", "reference"])]
    controller: String,
}

impl ChaosArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let settings = self.flags.settings()?;
        let subject = Subject::Controller(controller_mode(&self.controller, &[])?);
        let faults = awconf_bench::chaos::Faults {
            kills: self.kills,
            apiserver_restarts: self.apiserver_restarts,
            etcd_restarts: self.etcd_restarts,
            failovers: self.failovers,
            pauses: self.pauses,
        };
        let result = awconf_bench::chaos(&settings, &subject, &faults).await?;
        println!();
        for line in figures::table(std::slice::from_ref(&result.run)) {
            println!("{line}");
        }
        for line in figures::details(&result.run) {
            println!("{line}");
        }
        for what in &result.revived {
            println!("started again (it had exited by itself): {what}");
        }
        if let Some(path) = &self.flags.json {
            write_json(path, &result)?;
        }
        let reproduce = format!(
            "awconf bench chaos --kills {} --apiserver-restarts {} --etcd-restarts {} \
             --failovers {} --pauses {} --seed {} --appwrappers {} --at-once {} --controller {}",
            self.kills,
            self.apiserver_restarts,
            self.etcd_restarts,
            self.failovers,
            self.pauses,
            settings.seed,
            settings.appwrappers,
            settings.at_once,
            self.controller
        );
        if !result.verdict.unchecked.is_empty() {
            println!(
                "unchecked: {} changes the monitor could not see, the API server or etcd being \
                 down; the JSON report lists them",
                result.verdict.unchecked.len()
            );
        }
        if result.verdict.passed() {
            println!(
                "chaos verdict: passed (seed {}): {reproduce}",
                settings.seed
            );
            Ok(ExitCode::SUCCESS)
        } else {
            println!(
                "chaos verdict: FAILED ({} problems):",
                result.verdict.problems.len()
            );
            for problem in &result.verdict.problems {
                println!("  - {problem}");
            }
            println!("reproduce with seed {}: {reproduce}", settings.seed);
            Ok(ExitCode::FAILURE)
        }
    }
}
