//! One local cluster per test process, shared by all tests in it.

use std::sync::OnceLock;

use super::{LocalCluster, LocalOptions};

/// Starts the process-wide cluster on first use. It is built on a thread of its own, so it does
/// not depend on the async runtime of whichever test came first; its processes die with the
/// test process.
static CLUSTER: OnceLock<Result<LocalCluster, String>> = OnceLock::new();

pub fn shared() -> Result<&'static LocalCluster, String> {
    shared_at(crate::toolchain::KUBERNETES)
}

/// The process-wide cluster; its first caller chooses the Kubernetes release it runs, and a
/// later caller that asks for another one gets an error.
pub fn shared_at(kubernetes: &str) -> Result<&'static LocalCluster, String> {
    let release = kubernetes.to_string();
    let cluster = CLUSTER
        .get_or_init(|| {
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                runtime
                    .block_on(LocalCluster::up(LocalOptions {
                        kubernetes: release,
                        ..LocalOptions::default()
                    }))
                    .map_err(|e| e.to_string())
            })
            .join()
            .unwrap_or_else(|_| Err("the cluster start-up thread panicked".to_string()))
        })
        .as_ref()
        .map_err(|e| format!("the shared local cluster did not come up: {e}"))?;
    if cluster.kubernetes() != kubernetes {
        return Err(format!(
            "the shared local cluster already runs Kubernetes {}, not {kubernetes}",
            cluster.kubernetes()
        ));
    }
    Ok(cluster)
}

/// Ends the process-wide cluster before the process exits. A static is never dropped, so its
/// processes would die with this one but its work directory would stay until a later run
/// swept it. Kills its components, waits until they are gone, and removes the directory
/// (one with a real node is left to the sweep, which unmounts first).
pub fn release() {
    let Some(Ok(cluster)) = CLUSTER.get() else {
        return;
    };
    if cluster.real_node().is_some() {
        return;
    }
    let pids: Vec<u32> = cluster.pids().into_iter().map(|(_, pid)| pid).collect();
    for pid in &pids {
        crate::process::signal_group(*pid, rustix::process::Signal::KILL);
    }
    crate::poll::blocking_until(
        std::time::Duration::from_secs(5),
        std::time::Duration::from_millis(50),
        || !pids.iter().any(|pid| crate::process::is_alive(*pid)),
    );
    super::remove_work_dir(cluster.work_dir());
}
