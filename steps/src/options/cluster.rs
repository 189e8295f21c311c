//! The cluster the suite runs on, as `--cluster` names it.

/// Which cluster the suite runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ClusterChoice {
    /// The embedded control plane of crate `clusters`, with the real Kueue manager.
    #[default]
    Local,
}
