//! The providers driven through a command-line tool: kind, k3d, and docker for k3s.

pub mod cluster;
pub mod tool;

pub use cluster::{CliCluster, Tool};
pub use tool::ProviderCli;
