//! Why the real node did not start: the local provider's node half says so in these terms.

use std::path::PathBuf;

use crate::cluster::ClusterError;

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("{program} is not installed; install the real node's packages with: {install}")]
    NotInstalled {
        program: String,
        install: &'static str,
    },
    #[error("cannot start {name} ({}): {source}", binary.display())]
    Start {
        name: String,
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{name} exited ({status}) while the real node started; last lines of {}:\n{tail}",
        log.display()
    )]
    Exited {
        name: String,
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("{name} was not ready: {what}; last lines of {}:\n{tail}", log.display())]
    NotReady {
        name: String,
        what: String,
        log: PathBuf,
        tail: String,
    },
    #[error(
        "the real node {name} was not Ready within {seconds}s; see the kubelet and containerd logs"
    )]
    NodeNotReady { name: String, seconds: u64 },
    #[error(
        "a real node of the cluster in {} is already running on this machine, and only one can \
         (they would share the bridge {bridge}, kube-proxy's rules and the kubelet's view of the \
         machine); stop that cluster first (awconf cluster down)",
        work_dir.display()
    )]
    AlreadyRunning {
        work_dir: PathBuf,
        bridge: &'static str,
    },
    #[error("real node images: {0}")]
    Images(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Preparing the machine for the node (its sysctls, kubeconfigs, the claim on the machine).
    #[error("{0}")]
    Setup(String),
}

impl From<NodeError> for ClusterError {
    fn from(e: NodeError) -> Self {
        ClusterError::Provider(Box::new(e))
    }
}
