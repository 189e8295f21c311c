//! Why the local cluster did not start, stop or restart a part: the local provider's errors.

use std::path::PathBuf;

use crate::cluster::ClusterError;

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error(
        "{0} real nodes asked for, but one machine runs one: two kubelets and containerds would \
         share ports, directories, cgroups and the pod bridge. Use --real-nodes 1 (and --nodes \
         for more fake nodes)."
    )]
    TooManyRealNodes(usize),
    #[error("this machine cannot run a real node: {0}")]
    NoRealNode(String),
    #[error("cannot start {name} ({}): {source}", binary.display())]
    Start {
        name: String,
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {name} again: {source}")]
    Restart {
        name: String,
        source: std::io::Error,
    },
    #[error("this cluster did not start {0}")]
    NotStarted(String),
    #[error("{0} is not running")]
    NotRunning(String),
    #[error("no cluster state at {}: is a cluster up? (awconf cluster up --detach)", .0.display())]
    NoState(PathBuf),
    #[error("{}: {source}", path.display())]
    BadState {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "the real node was not fully torn down ({}); its files stay in {}",
        errors.join("; "),
        work_dir.display()
    )]
    NodeLeft {
        errors: Vec<String>,
        work_dir: PathBuf,
    },
    /// Writing what the components are started with, or building them.
    #[error("{0}")]
    Setup(String),
}

impl From<LocalError> for ClusterError {
    fn from(e: LocalError) -> Self {
        ClusterError::Provider(Box::new(e))
    }
}
