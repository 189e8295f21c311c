//! One Kueue per process, on the process-wide local cluster: the suite's, and each test
//! binary's; and where any Kueue on a local cluster keeps its files.

use std::sync::OnceLock;

use tokio::sync::Mutex;

use crate::kueue::{Kueue, KueueHost, KueueSource};
use crate::providers::local::{self, LocalCluster};

pub fn host(cluster: &LocalCluster) -> KueueHost {
    KueueHost {
        work_dir: cluster.work_dir().to_path_buf(),
        kubeconfig: crate::cluster::Cluster::kubeconfig(cluster).to_path_buf(),
        cache: crate::toolchain::cache_dir(),
        detached: false,
    }
}

/// The shared cluster with Kueue of `version` running; started on first use on a thread of
/// its own. The mutex lets `@serial` work stop, restart or upgrade it.
pub fn shared(
    source: &KueueSource,
) -> Result<(&'static LocalCluster, &'static Mutex<Kueue>), String> {
    shared_at(source, crate::toolchain::KUBERNETES)
}

/// Like [`shared`], with the cluster's Kubernetes release chosen by its first caller.
pub fn shared_at(
    source: &KueueSource,
    kubernetes: &str,
) -> Result<(&'static LocalCluster, &'static Mutex<Kueue>), String> {
    static KUEUE: OnceLock<Result<Mutex<Kueue>, String>> = OnceLock::new();
    let cluster = local::shared_at(kubernetes)?;
    let source = source.clone();
    let kueue = KUEUE
        .get_or_init(|| {
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                runtime
                    .block_on(Kueue::start(host(cluster), &source))
                    .map(Mutex::new)
                    .map_err(|e| e.to_string())
            })
            .join()
            .unwrap_or_else(|_| Err("the Kueue start-up thread panicked".to_string()))
        })
        .as_ref()
        .map_err(|e| format!("Kueue did not come up on the shared cluster: {e}"))?;
    Ok((cluster, kueue))
}
