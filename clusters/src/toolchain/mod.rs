//! Pinned Go binaries: where they live in the cache, and how they are built.

mod build;
mod go;
mod kubernetes_module;
mod versions;
pub mod wrappers;

pub use build::{BuildError, BuildReport, build_all, ensure, module_source, source_snapshot};
pub use go::{GoError, check_go};
pub use kubernetes_module::release as kubernetes_release;
pub use versions::*;

use std::path::{Path, PathBuf};

/// One thing `go build` produces for us; Kubernetes gives three binaries from one build.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Component {
    pub name: &'static str,
    pub version: String,
}

impl Component {
    /// The control plane of a Kubernetes release ([`KUBERNETES`] unless `--kubernetes`).
    pub fn kubernetes(version: &str) -> Self {
        Self::pinned("kubernetes", version)
    }
    /// The kubelet and kube-proxy of a real node, from the same wrapper module as the control
    /// plane but cached apart, so that KWOK-only clusters never wait for their build.
    pub fn kubernetes_node(version: &str) -> Self {
        Self::pinned("kubernetes-node", version)
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

    /// The control plane of the Kubernetes release `kubernetes`, in the order they are needed.
    pub fn control_plane(kubernetes: &str) -> Vec<Self> {
        vec![Self::etcd(), Self::kubernetes(kubernetes), Self::kwok()]
    }

    /// The component whose compiled packages this one's build reuses when built after it in
    /// the same Go build cache: KWOK's and [`KUEUE_ON_DEFAULT_MODULES`]' wrapper modules require
    /// the modules of the default Kueue's at its versions.
    pub fn builds_on(&self) -> Option<Self> {
        let on_default_kueue = match self.name {
            "kwok" => true,
            "kueue" => KUEUE_ON_DEFAULT_MODULES.contains(&self.version.as_str()),
            _ => false,
        };
        on_default_kueue.then(|| Self::kueue(KUEUE_DEFAULT))
    }

    fn is_kubernetes(&self) -> bool {
        matches!(self.name, "kubernetes" | "kubernetes-node" | "kubectl")
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
            _ if self.is_kubernetes() && self.version != KUBERNETES => {
                format!("kubernetes-{}", self.version)
            }
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

/// `$AWCONF_CACHE`, else `$XDG_CACHE_HOME/awconf`, else `~/.cache/awconf`.
pub fn cache_dir() -> PathBuf {
    cache_dir_from(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
}

fn cache_dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    if let Some(dir) = var("AWCONF_CACHE") {
        return PathBuf::from(dir);
    }
    // The XDG base directory spec ignores a relative XDG_CACHE_HOME.
    if let Some(dir) = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
    {
        return dir.join("awconf");
    }
    let home = var("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("awconf")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kubernetes_release_has_its_own_wrapper_module_and_cache_directory() {
        let default = Component::kubernetes(KUBERNETES);
        assert_eq!(default.wrapper_module(), "kubernetes");
        let other = Component::kubernetes("v1.35.4");
        assert_eq!(other.wrapper_module(), "kubernetes-v1.35.4");
        assert_eq!(
            Component::kubernetes_node("v1.35.4").wrapper_module(),
            "kubernetes-v1.35.4"
        );
        assert_ne!(default.dir(Path::new("/c")), other.dir(Path::new("/c")));
    }

    #[test]
    fn the_cache_is_awconf_cache_then_xdg_then_home() {
        let table: &[(&[(&str, &str)], &str)] = &[
            (
                &[
                    ("AWCONF_CACHE", "/c"),
                    ("XDG_CACHE_HOME", "/x"),
                    ("HOME", "/h"),
                ],
                "/c",
            ),
            (&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")], "/x/awconf"),
            (
                &[("XDG_CACHE_HOME", "relative"), ("HOME", "/h")],
                "/h/.cache/awconf",
            ),
            (&[("HOME", "/h")], "/h/.cache/awconf"),
        ];
        for (vars, want) in table {
            let got = cache_dir_from(|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            });
            assert_eq!(got, PathBuf::from(want), "{vars:?}");
        }
    }
}
