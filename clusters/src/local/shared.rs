//! One local cluster per test process, shared by all tests in it.

use std::sync::OnceLock;

use super::{LocalCluster, LocalOptions};

/// Starts the process-wide cluster on first use. It is built on a thread of its own, so it does
/// not depend on the async runtime of whichever test came first; its processes die with the
/// test process.
pub fn shared() -> Result<&'static LocalCluster, String> {
    static CLUSTER: OnceLock<Result<LocalCluster, String>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            std::thread::spawn(|| {
                let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
                runtime
                    .block_on(LocalCluster::up(LocalOptions::default()))
                    .map_err(|e| e.to_string())
            })
            .join()
            .unwrap_or_else(|_| Err("the cluster start-up thread panicked".to_string()))
        })
        .as_ref()
        .map_err(|e| format!("the shared local cluster did not come up: {e}"))
}
