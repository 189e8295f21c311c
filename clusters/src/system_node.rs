//! The node that runs Kueue and the controller when they are installed in the cluster, marked
//! so that the in-cluster installer can pin them there with a node selector.

pub const SYSTEM_NODE_LABEL: (&str, &str) = ("awconf.dev/system", "true");

/// `awconf.dev/system=true`, as node-label flags take it.
pub fn system_node_label() -> String {
    format!("{}={}", SYSTEM_NODE_LABEL.0, SYSTEM_NODE_LABEL.1)
}
