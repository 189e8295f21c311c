//! Why Kueue did not build, start or take an object: the Kueue component's errors.

use std::path::PathBuf;

use super::METRICS_CERT_DIR;

#[derive(Debug, thiserror::Error)]
pub enum KueueError {
    #[error(
        "--kueue-source {}: no go.mod ({source}); give the root of a Kueue checkout",
        dir.display()
    )]
    NoGoMod {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "--kueue-source {}: its go.mod is not `module sigs.k8s.io/kueue`",
        .0.display()
    )]
    NotKueue(PathBuf),
    #[error("building Kueue from {}: {source}", dir.display())]
    BuildDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("building Kueue from {}: cannot run go: {source}", dir.display())]
    NoGo {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("building Kueue from {}: `go build ./cmd/kueue` failed: {stderr}", dir.display())]
    GoBuild { dir: PathBuf, stderr: String },
    #[error("preparing Kueue: {0}")]
    Prepare(#[source] tokio::task::JoinError),
    #[error("cannot start {}: {source}", binary.display())]
    Start {
        binary: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Manifests {
        path: PathBuf,
        source: Box<serde_saphyr::Error>,
    },
    #[error("{kind} without webhooks")]
    NoWebhooks { kind: String },
    #[error("webhook {name} has no service path")]
    NoServicePath { name: String },
    #[error(
        "Kueue reads a metrics certificate from {METRICS_CERT_DIR} (a path it hard-codes) and stops \
         without one, but it cannot be written: {0}. Run as root, or create the directory and make it \
         writable for this user (sudo mkdir -p {METRICS_CERT_DIR} && sudo chown $USER {METRICS_CERT_DIR})."
    )]
    MetricsCert(#[source] std::io::Error),
    #[error("Kueue's AppWrapper webhook did not answer within {seconds}s: {last}")]
    WebhookSilent { seconds: u64, last: String },
    #[error("not a Kueue object kind: {0:?}")]
    NotAKueueKind(String),
}

impl From<KueueError> for crate::cluster::ClusterError {
    fn from(e: KueueError) -> Self {
        crate::cluster::ClusterError::Part(Box::new(e))
    }
}
