//! Clusters for the conformance harness: the embedded control plane built from pinned Go
//! modules, and the interface that the kind, k3d, k3s and existing-cluster providers implement.
//! Each provider lives under `providers/`; what they share (nodes, images, installs, the
//! toolchain, work directories) stands beside it.

pub mod cluster;
pub mod crds;
pub mod health;
pub mod host;
pub mod images;
pub mod inotify;
pub mod install;
pub mod kubeconfig;
pub mod kueue;
pub mod mounts;
pub mod netns;
pub mod nodes;
pub mod owner_only;
pub mod pki;
pub mod poll;
pub mod ports;
pub mod process;
pub mod progress;
pub mod providers;
pub mod shared_kueue;
pub mod system_node;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod toolchain;
pub mod webhook_retry;
pub mod work_dirs;

pub use cluster::{Capabilities, Cluster, ClusterError};
pub use providers::existing::ExistingCluster;
pub use providers::k3d::{K3dCluster, K3dOptions};
pub use providers::k3s::{K3sCluster, K3sOptions};
pub use providers::kind::{KindCluster, KindOptions};
pub use providers::local::{LocalCluster, LocalOptions};
pub use providers::{Provider, UnknownProvider};
