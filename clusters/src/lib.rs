//! Clusters for the conformance harness: the embedded control plane built from pinned Go
//! modules, and the interface that the kind, k3d, k3s and existing-cluster providers implement.

pub mod cli_cluster;
pub mod cluster;
pub mod crds;
pub mod existing;
pub mod host;
pub mod images;
pub mod install;
pub mod k3d;
pub mod k3s;
pub mod kind;
pub mod kubeconfig;
pub mod kueue;
pub mod local;
pub mod nodes;
pub mod pki;
pub mod ports;
pub mod private;
pub mod process;
pub mod progress;
pub mod provider;
pub mod provider_cli;
pub mod system_node;
pub mod testing;
pub mod toolchain;
pub mod webhook_retry;
pub mod work_dirs;

pub use cluster::{Capabilities, Cluster, ClusterError};
pub use existing::ExistingCluster;
pub use k3d::{K3dCluster, K3dOptions};
pub use k3s::{K3sCluster, K3sOptions};
pub use kind::{KindCluster, KindOptions};
pub use local::{LocalCluster, LocalOptions};
pub use provider::{Provider, UnknownProvider};
