//! Pinned Go binaries: where they live in the cache, and how they are built.

mod build;
mod go;
mod versions;
pub mod wrappers;

pub use build::{BuildError, BuildReport, build_all, ensure, module_source};
pub use go::{GoError, check_go};
pub use versions::*;

use std::path::{Path, PathBuf};

/// One thing `go build` produces for us; Kubernetes gives three binaries from one build.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Component {
    pub name: &'static str,
    pub version: String,
}

impl Component {
    pub fn kubernetes() -> Self {
        Self::pinned("kubernetes", KUBERNETES)
    }
    /// The kubelet and kube-proxy of a real node, from the same wrapper module as the control
    /// plane but cached apart, so that KWOK-only clusters never wait for their build.
    pub fn kubernetes_node() -> Self {
        Self::pinned("kubernetes-node", KUBERNETES)
    }
    /// kubectl, whose `kustomize` renders Kueue's and KWOK's release manifests for an install
    /// into a cluster; same module, cached apart like the node's binaries.
    pub fn kubectl() -> Self {
        Self::pinned("kubectl", KUBERNETES)
    }
    pub fn etcd() -> Self {
        Self::pinned("etcd", ETCD)
    }
    pub fn kwok() -> Self {
        Self::pinned("kwok", KWOK)
    }
    pub fn kueue(version: &str) -> Self {
        Self {
            name: "kueue",
            version: version.to_string(),
        }
    }
    /// The reference AppWrapper operator.
    pub fn appwrapper(version: &str) -> Self {
        Self {
            name: "appwrapper",
            version: version.to_string(),
        }
    }
    fn pinned(name: &'static str, version: &str) -> Self {
        Self {
            name,
            version: version.to_string(),
        }
    }

    /// The control plane, in the order they are needed.
    pub fn control_plane() -> Vec<Self> {
        vec![Self::etcd(), Self::kubernetes(), Self::kwok()]
    }

    pub fn binaries(&self) -> &'static [&'static str] {
        match self.name {
            "kubernetes" => &[
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler",
            ],
            "kubernetes-node" => &["kubelet", "kube-proxy"],
            "kubectl" => &["kubectl"],
            "etcd" => &["etcd"],
            "kwok" => &["kwok"],
            "appwrapper" => &["appwrapper-operator"],
            _ => &["kueue"],
        }
    }

    /// The directory under `clusters/toolchain/` that holds this component's wrapper module.
    pub fn wrapper_module(&self) -> String {
        match self.name {
            "kueue" | "appwrapper" => format!("{}-{}", self.name, self.version),
            "kubernetes-node" | "kubectl" => "kubernetes".into(),
            name => name.into(),
        }
    }

    pub fn dir(&self, cache: &Path) -> PathBuf {
        cache.join("bin").join(self.name).join(&self.version)
    }

    pub fn binary(&self, cache: &Path, binary: &str) -> PathBuf {
        self.dir(cache).join(binary)
    }

    pub fn is_built(&self, cache: &Path) -> bool {
        self.binaries()
            .iter()
            .all(|b| self.binary(cache, b).is_file())
    }
}

impl std::fmt::Display for Component {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// `$AWCONF_CACHE`, else `~/.cache/awconf`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AWCONF_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("awconf")
}
