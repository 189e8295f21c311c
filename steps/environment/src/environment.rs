//! What a run's scenarios run on, once it is up.

use std::path::PathBuf;

use crate::installed;
use crate::under_test::ControllerUnderTest;

/// The run's environment did not come up (the cluster, Kueue, the controller under test or
/// the invariant monitor): `awconf` exits 3 for it, not 2 as for a usage error.
#[derive(Debug, thiserror::Error)]
#[error("the environment did not come up")]
pub struct EnvironmentFailed(#[source] Box<dyn std::error::Error + Send + Sync>);

impl From<anyhow::Error> for EnvironmentFailed {
    fn from(error: anyhow::Error) -> Self {
        EnvironmentFailed(error.into())
    }
}

/// The cluster with Kueue and the controller under test, and the clients of the steps.
pub struct Environment {
    pub kubeconfig: PathBuf,
    /// For steps and hooks: requests time out.
    pub client: kube::Client,
    /// For watches: no read timeout.
    pub watch_client: kube::Client,
    pub kueue_log: PathBuf,
    /// The API server's audit log with every AppWrapper write, where there is one: the
    /// invariant monitor's source.
    pub audit_log: Option<PathBuf>,
    /// The URL of the API server's etcd, where awconf started it: the monitor reads back
    /// from its history the states of writes the audit log never finished.
    pub etcd: Option<String>,
    pub controller: ControllerUnderTest,
    /// What the run changed on an installed controller, put back at the end.
    pub restore: Option<installed::Restore>,
    pub capabilities: clusters::Capabilities,
    /// Kueue as a process of the run (the local cluster's), which steps may upgrade.
    pub kueue: Option<&'static tokio::sync::Mutex<clusters::kueue::Kueue>>,
    /// Kept for the run and released after it: a created cluster, followed logs.
    pub keep: Vec<Box<dyn std::any::Any + Send + Sync>>,
}
