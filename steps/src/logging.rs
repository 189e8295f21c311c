//! The harness log: everything logged through `tracing` during a run (the embedded
//! controller included) goes to `<report dir>/harness.log`, so that the lines of a failed
//! scenario can be kept with its artifacts.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use tracing_subscriber::EnvFilter;

static LOG: OnceLock<PathBuf> = OnceLock::new();

/// Installs the global subscriber writing to `<report_dir>/harness.log` (filter: `AWCONF_LOG`,
/// default `info` with kube's own chatter at `warn`). Returns the path, or `None` when another
/// subscriber is already installed (the embedded controller then logs wherever that one
/// writes).
pub fn init(report_dir: &Path) -> Option<PathBuf> {
    if let Some(path) = LOG.get() {
        return Some(path.clone());
    }
    std::fs::create_dir_all(report_dir).ok()?;
    let path = report_dir.join("harness.log");
    let file = std::fs::File::create(&path).ok()?;
    let filter = EnvFilter::try_from_env("AWCONF_LOG").unwrap_or_else(|_| {
        EnvFilter::new("info,kube=warn,kube_runtime=warn,tower=warn,hyper=warn")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .try_init()
        .ok()?;
    let _ = LOG.set(path.clone());
    Some(path)
}

/// The harness log of this process, if [`init`] installed one.
pub fn current() -> Option<PathBuf> {
    LOG.get().cloned()
}
