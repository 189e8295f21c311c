//! Where the Kueue under test comes from: a release tag built from the Go module proxy, a
//! local checkout built with `go build` (a Kueue maintainer's branch), or a binary someone
//! built, with the CRDs it goes with.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{KueueError, KueueVersion};
use crate::cluster::ClusterError;
use crate::toolchain::{self, Component};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KueueSource {
    Release(KueueVersion),
    /// A directory whose go.mod is `sigs.k8s.io/kueue`; its `config/` holds the CRDs, webhook
    /// manifests and release kustomization.
    Checkout(PathBuf),
    /// A built manager binary and the directory of its CRDs; the manifests and feature gates
    /// are those of `version`, the release it is closest to.
    Binary {
        binary: PathBuf,
        crds: PathBuf,
        version: KueueVersion,
    },
}

/// The built manager and the `config/` directory its manifests come from.
pub struct Materialized {
    pub binary: PathBuf,
    pub config: PathBuf,
    /// CRDs (`config/components/crd/bases` unless given apart).
    pub crds: PathBuf,
}

impl KueueSource {
    /// The release `toolchain::KUEUE_DEFAULT` pins.
    pub fn pinned() -> Self {
        KueueSource::release(toolchain::KUEUE_DEFAULT)
            .unwrap_or(KueueSource::Release(KueueVersion(0, 19, 2)))
    }

    pub fn release(tag: &str) -> Result<Self, String> {
        KueueVersion::parse(tag).map(KueueSource::Release)
    }

    /// The release it is, or is closest to; a checkout's is not known.
    pub fn release_version(&self) -> Option<KueueVersion> {
        match self {
            KueueSource::Release(v) | KueueSource::Binary { version: v, .. } => Some(*v),
            KueueSource::Checkout(_) => None,
        }
    }

    /// What reports and messages call it.
    pub fn label(&self) -> String {
        match self {
            KueueSource::Release(v) => v.to_string(),
            KueueSource::Checkout(dir) => format!("checkout {}", dir.display()),
            KueueSource::Binary { binary, .. } => format!("binary {}", binary.display()),
        }
    }

    /// The gates our manager config sets: a checkout's are read from its source (the gates it
    /// knows), a release's and a binary's follow its version.
    pub fn feature_gates(&self) -> Vec<(&'static str, bool)> {
        match self {
            KueueSource::Release(v) | KueueSource::Binary { version: v, .. } => v.feature_gates(),
            KueueSource::Checkout(dir) => {
                let features = std::fs::read_to_string(dir.join("pkg/features/kube_features.go"))
                    .unwrap_or_default();
                gates_known_to(&features)
            }
        }
    }

    /// Builds what needs building (a release into the cache by version, a checkout with
    /// `go build` into the cache by its directory) and says where everything is.
    pub fn materialize(&self, cache: &Path) -> Result<Materialized, ClusterError> {
        match self {
            KueueSource::Release(version) => {
                let component = Component::kueue(&version.to_string());
                toolchain::ensure(&component, cache)?;
                let source = toolchain::module_source(&component, cache, "sigs.k8s.io/kueue")?;
                Ok(Materialized {
                    binary: component.binary(cache, "kueue"),
                    crds: source.join("config/components/crd/bases"),
                    config: source.join("config"),
                })
            }
            KueueSource::Checkout(dir) => {
                check_checkout(dir)?;
                let out = checkout_binary(cache, dir);
                build_checkout(dir, &out)?;
                Ok(Materialized {
                    binary: out,
                    crds: dir.join("config/components/crd/bases"),
                    config: dir.join("config"),
                })
            }
            KueueSource::Binary {
                binary,
                crds,
                version,
            } => {
                let release = KueueSource::Release(*version).materialize(cache)?;
                Ok(Materialized {
                    binary: binary.clone(),
                    crds: crds.clone(),
                    config: release.config,
                })
            }
        }
    }
}

/// Our gates that the source at hand declares (a gate Kueue does not know stops it).
pub fn gates_known_to(kube_features_go: &str) -> Vec<(&'static str, bool)> {
    let newest = KueueVersion(u32::MAX, 0, 0).feature_gates();
    newest
        .into_iter()
        .filter(|(name, _)| kube_features_go.contains(&format!("{name} featuregate.Feature")))
        .collect()
}

fn check_checkout(dir: &Path) -> Result<(), KueueError> {
    let go_mod =
        std::fs::read_to_string(dir.join("go.mod")).map_err(|source| KueueError::NoGoMod {
            dir: dir.to_path_buf(),
            source,
        })?;
    if !go_mod
        .lines()
        .any(|l| l.trim() == "module sigs.k8s.io/kueue")
    {
        return Err(KueueError::NotKueue(dir.to_path_buf()));
    }
    Ok(())
}

/// One build per checkout directory, rebuilt on every run (the branch may have changed).
fn checkout_binary(cache: &Path, dir: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let key: String = Sha256::digest(dir.display().to_string().as_bytes())
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect();
    cache
        .join("bin")
        .join("kueue-checkout")
        .join(key)
        .join("kueue")
}

fn build_checkout(dir: &Path, out: &Path) -> Result<(), KueueError> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|source| KueueError::BuildDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    eprintln!(
        "[toolchain] building Kueue from the checkout {} with go build",
        dir.display()
    );
    let output = Command::new("go")
        .current_dir(dir)
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-mod=mod")
        .args(["build", "-trimpath", "-ldflags=-s -w", "-o"])
        .arg(out)
        .arg("./cmd/kueue")
        .output()
        .map_err(|source| KueueError::NoGo {
            dir: dir.to_path_buf(),
            source,
        })?;
    if !output.status.success() {
        return Err(KueueError::GoBuild {
            dir: dir.to_path_buf(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// The Kueue version a run or a test uses unless told: `$AWCONF_KUEUE_VERSION`, else the
/// pinned default.
pub fn default_version() -> String {
    std::env::var("AWCONF_KUEUE_VERSION")
        .unwrap_or_else(|_| crate::toolchain::KUEUE_DEFAULT.to_string())
}

/// [`default_version`] as a source.
pub fn default_source() -> Result<KueueSource, String> {
    KueueSource::release(&default_version())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkout_gets_only_the_gates_its_source_declares() {
        let with_both = "\tVisibilityOnDemand featuregate.Feature = \"VisibilityOnDemand\"\n\
                         \tDisableWaitForPodsReady featuregate.Feature = \"DisableWaitForPodsReady\"\n";
        assert_eq!(
            gates_known_to(with_both),
            vec![
                ("VisibilityOnDemand", false),
                ("DisableWaitForPodsReady", true)
            ]
        );
        let older = "\tVisibilityOnDemand featuregate.Feature = \"VisibilityOnDemand\"\n";
        assert_eq!(gates_known_to(older), vec![("VisibilityOnDemand", false)]);
    }

    #[test]
    fn a_checkout_must_be_kueue() {
        let dir = tempfile::tempdir().unwrap();
        let e = check_checkout(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no go.mod"), "{e}");
        std::fs::write(dir.path().join("go.mod"), "module example.com/other\n").unwrap();
        let e = check_checkout(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not `module sigs.k8s.io/kueue`"), "{e}");
        std::fs::write(
            dir.path().join("go.mod"),
            "module sigs.k8s.io/kueue\n\ngo 1.26\n",
        )
        .unwrap();
        assert!(check_checkout(dir.path()).is_ok());
    }

    #[test]
    fn labels_say_where_kueue_came_from() {
        assert_eq!(KueueSource::release("v0.19.2").unwrap().label(), "v0.19.2");
        assert_eq!(
            KueueSource::Checkout("/src/kueue".into()).label(),
            "checkout /src/kueue"
        );
        assert!(KueueSource::release("main").is_err());
        assert_eq!(KueueSource::pinned().label(), toolchain::KUEUE_DEFAULT);
    }
}
