//! The flags `load` and `chaos` share, and writing the JSON.

use std::path::{Path, PathBuf};
use std::time::Duration;

use awconf_bench::Settings;
use clap::Args;
use conformance_steps::ControllerMode;

use crate::cli::monitor_source::MonitorSource;

#[derive(Args, Clone, Debug)]
pub struct LoadFlags {
    /// AppWrappers in the plan.
    #[arg(long, default_value_t = 100)]
    pub appwrappers: usize,
    /// The ClusterQueue's quota admits about this many at once (each asks for one CPU).
    #[arg(long, default_value_t = 20)]
    pub at_once: usize,
    /// Fake nodes (default: enough for --at-once AppWrappers of 8 pods, at least 2).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// The plan's seed (default: from the clock, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// How long a run waits for every AppWrapper to end, in seconds.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
    /// Where each run's controller log and configuration go.
    #[arg(long, default_value = "target/awconf-bench")]
    pub report: PathBuf,
    /// Write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Trace which writes Kueue's Workload writes answer: the audit log keeps the object each
    /// write to an AppWrapper or Workload left (costlier; not for the timing figures).
    #[arg(long)]
    pub trace_writes: bool,
    /// Where the invariant monitor reads the AppWrappers' states: every write from the API
    /// server's audit log, or a watch (which misses what changes during an outage).
    #[arg(long, value_enum, default_value_t = MonitorSource::AuditLog)]
    pub monitor_source: MonitorSource,
    #[command(flatten)]
    pub kueue: crate::cli::kueue_source::KueueArgs,
}

impl LoadFlags {
    pub fn settings(&self) -> anyhow::Result<Settings> {
        anyhow::ensure!(self.appwrappers > 0, "--appwrappers must be at least 1");
        anyhow::ensure!(self.at_once > 0, "--at-once must be at least 1");
        anyhow::ensure!(self.nodes != Some(0), "--nodes must be at least 1");
        let default = clusters::kueue::default_version();
        Ok(Settings {
            appwrappers: self.appwrappers,
            at_once: self.at_once,
            nodes: self.nodes,
            seed: self.seed.unwrap_or_else(awconf_bench::rng::fresh_seed),
            kueue: self.kueue.source(&default)?,
            report_dir: self.report.clone(),
            timeout: Duration::from_secs(self.timeout),
            trace_writes: self.trace_writes,
            monitor_from_log: self.monitor_source == MonitorSource::AuditLog,
        })
    }
}

/// `embedded`, `process`, `reference` or `external` (with the command after `--`).
pub fn controller_mode(name: &str, command: &[String]) -> anyhow::Result<ControllerMode> {
    let command = conformance_steps::options::ExternalCommand::from_words(command.to_vec());
    ControllerMode::parse(name, command, None).map_err(anyhow::Error::msg)
}

pub fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(value)?)?;
    println!("results written to {}", path.display());
    Ok(())
}
