//! The runner image: awconf, our controller, kubectl, a busybox shell and the pinned binaries
//! a run needs, so that a container of it reaches a verdict with no Go or Rust build. One
//! layer for the system files, one per pinned component, and awconf last: images of two awconf
//! releases, or with one more Kubernetes or Kueue release, share their other layers.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::ImageError;
use super::archive::{Entry, Image};
use super::contents::{busybox_image, shared_libraries};
use crate::kueue::KueueVersion;
use crate::toolchain::{self, Component};

/// `$AWCONF_CACHE` inside the image.
pub const CACHE: &str = "/opt/awconf/cache";
/// The container's working directory, where GitHub mounts a job's workspace.
pub const WORKSPACE: &str = "/github/workspace";
/// Where awconf, our controller and kubectl are.
pub const BIN: &str = "/usr/local/bin";

/// The local name of the runner image of this awconf (`awconf image` tags it so unless told).
pub fn default_reference() -> String {
    format!("awconf.local/runner:{}", env!("CARGO_PKG_VERSION"))
}

/// What goes into a runner image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunnerSpec {
    pub reference: String,
    /// The awconf binary, and our controller's (`--controller process` runs it).
    pub awconf: PathBuf,
    pub controller: PathBuf,
    /// A static busybox: `sh` for `--controller external` commands and the action's script.
    pub busybox: PathBuf,
    /// Kubernetes releases of the control plane, the default first.
    pub kubernetes: Vec<String>,
    /// Kueue releases; the default's upgrade start is among them unless left out.
    pub kueue: Vec<String>,
    /// Reference operator releases (`--controller reference`).
    pub appwrapper: Vec<String>,
}

impl RunnerSpec {
    /// The default pins: the Kubernetes and Kueue releases `awconf run` uses with no flag, the
    /// Kueue its upgrade scenario starts from, and the reference operator; plus `kubernetes`
    /// and `kueue` (a variant with more releases).
    pub fn with_default_pins(
        awconf: PathBuf,
        controller: PathBuf,
        busybox: PathBuf,
        kubernetes: &[String],
        kueue: &[String],
    ) -> Self {
        let mut kubernetes_all = vec![toolchain::KUBERNETES.to_string()];
        let mut kueue_all = vec![toolchain::KUEUE_DEFAULT.to_string()];
        if let Some(previous) = KueueVersion::parse(toolchain::KUEUE_DEFAULT)
            .ok()
            .and_then(|v| v.previous_pinned())
        {
            kueue_all.push(previous.to_string());
        }
        for (all, more) in [(&mut kubernetes_all, kubernetes), (&mut kueue_all, kueue)] {
            for version in more {
                if !all.contains(version) {
                    all.push(version.clone());
                }
            }
        }
        RunnerSpec {
            reference: default_reference(),
            awconf,
            controller,
            busybox,
            kubernetes: kubernetes_all,
            kueue: kueue_all,
            appwrapper: vec![toolchain::APPWRAPPER_DEFAULT.to_string()],
        }
    }

    /// The Go components the image carries, in layer order: the control plane's companions,
    /// each Kubernetes release, each Kueue, each reference operator.
    pub fn components(&self) -> Vec<Component> {
        let mut all = vec![Component::etcd(), Component::kwok(), Component::kubectl()];
        all.extend(self.kubernetes.iter().map(|v| Component::kubernetes(v)));
        all.extend(self.kueue.iter().map(|v| Component::kueue(v)));
        all.extend(self.appwrapper.iter().map(|v| Component::appwrapper(v)));
        all
    }
}

/// The module whose source a run reads files of, and those files: Kueue's CRDs and manifests,
/// the reference operator's manifests.
fn module_files(component: &Component) -> Option<(&'static str, &'static str)> {
    match component.name {
        "kueue" => Some(("sigs.k8s.io/kueue", "config")),
        "appwrapper" => Some(("github.com/project-codeflare/appwrapper", "config")),
        _ => None,
    }
}

/// The image, from binaries already built into `cache` (`toolchain::build_all` first).
pub fn runner_image(spec: &RunnerSpec, cache: &Path) -> Result<Image, ImageError> {
    let in_image = Path::new(CACHE);
    let mut layers = Vec::new();
    for component in spec.components() {
        if !component.is_built(cache) {
            return Err(ImageError::Input(format!(
                "{component} is not built in {}: run `awconf toolchain build` first",
                cache.display()
            )));
        }
        let dir = component.dir(cache);
        let mut entries = tree(
            &dir,
            &in_image.join(dir.strip_prefix(cache).unwrap_or(&dir)),
        )?;
        if let Some((module, files)) = module_files(&component) {
            let source = toolchain::module_source(&component, cache, module)?;
            let snapshot = toolchain::source_snapshot(&component, in_image);
            entries.extend(tree(&source.join(files), &snapshot.join(files))?);
        }
        layers.push(entries);
    }
    let kubectl = Component::kubectl();
    let mut last = vec![Entry::Symlink {
        path: format!("{BIN}/kubectl"),
        target: kubectl.binary(in_image, "kubectl").display().to_string(),
    }];
    for (binary, name) in [
        (&spec.awconf, "awconf"),
        (&spec.controller, "appwrapper-controller"),
    ] {
        last.push(Entry::File {
            path: format!("{BIN}/{name}"),
            source: binary.clone(),
            mode: 0o755,
        });
    }
    Ok(Image {
        reference: spec.reference.clone(),
        entries: system_layer(spec)?,
        layers: layers.into_iter().chain([last]).collect(),
        entrypoint: vec![format!("{BIN}/awconf")],
        cmd: vec!["run".into()],
        env: vec![
            format!("PATH={BIN}:/usr/bin:/bin"),
            format!("AWCONF_CACHE={CACHE}"),
            "HOME=/root".into(),
        ],
        // Root in the container: Kueue writes its metrics certificate under /etc.
        user: String::new(),
        working_dir: WORKSPACE.into(),
    })
}

/// busybox with its applets, the shared libraries of awconf and our controller, and the few
/// files and directories a Linux program expects.
fn system_layer(spec: &RunnerSpec) -> Result<Vec<Entry>, ImageError> {
    let mut entries = busybox_image("awconf.local/unused:0", &spec.busybox)?.entries;
    let mut libraries = BTreeSet::new();
    for binary in [&spec.awconf, &spec.controller] {
        libraries.extend(shared_libraries(binary)?);
    }
    entries.extend(libraries.into_iter().map(|library| Entry::File {
        path: library.display().to_string(),
        source: library,
        mode: 0o755,
    }));
    let text = |path: &str, data: &str| Entry::Bytes {
        path: path.into(),
        data: data.as_bytes().to_vec(),
        mode: 0o644,
    };
    entries.extend([
        text(
            "/etc/passwd",
            "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
        ),
        text("/etc/group", "root:x:0:\nnogroup:x:65534:\n"),
        text("/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n"),
        text("/etc/nsswitch.conf", "hosts: files dns\n"),
        Entry::Dir {
            path: "/root".into(),
            mode: 0o700,
        },
        Entry::Dir {
            path: "/var/tmp".into(),
            mode: 0o1777,
        },
        Entry::Dir {
            path: "/etc/kueue/metrics/certs".into(),
            mode: 0o755,
        },
        Entry::Dir {
            path: WORKSPACE.into(),
            mode: 0o755,
        },
    ]);
    Ok(entries)
}

/// Every file, link and directory under `dir`, at the same place under `to`, in name order;
/// files keep their permission bits (at least readable: Go's module cache makes them
/// read-only).
fn tree(dir: &Path, to: &Path) -> Result<Vec<Entry>, ImageError> {
    use std::os::unix::fs::PermissionsExt;
    let mut entries = Vec::new();
    for found in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let found =
            found.map_err(|e| ImageError::Input(format!("reading {}: {e}", dir.display())))?;
        let from = found.path();
        let path = match from.strip_prefix(dir) {
            Ok(inside) if found.depth() > 0 => to.join(inside),
            _ => to.to_path_buf(),
        }
        .display()
        .to_string();
        let kind = found.file_type();
        if kind.is_dir() {
            entries.push(Entry::Dir { path, mode: 0o755 });
        } else if kind.is_symlink() {
            let target = std::fs::read_link(from)
                .map_err(|e| ImageError::Input(format!("{}: {e}", from.display())))?;
            entries.push(Entry::Symlink {
                path,
                target: target.display().to_string(),
            });
        } else if kind.is_file() {
            let meta = found
                .metadata()
                .map_err(|e| ImageError::Input(format!("{}: {e}", from.display())))?;
            entries.push(Entry::File {
                path,
                source: from.to_path_buf(),
                mode: (meta.permissions().mode() & 0o777) | 0o444,
            });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kubernetes: &[&str], kueue: &[&str]) -> RunnerSpec {
        let words = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        RunnerSpec::with_default_pins(
            "/a".into(),
            "/c".into(),
            "/bin/busybox".into(),
            &words(kubernetes),
            &words(kueue),
        )
    }

    #[test]
    fn the_default_pins_and_the_upgrade_start_are_in_and_more_are_added_once() {
        let default = spec(&[], &[]);
        assert_eq!(default.kubernetes, vec![toolchain::KUBERNETES]);
        assert_eq!(default.kueue, vec![toolchain::KUEUE_DEFAULT, "v0.18.4"]);
        assert_eq!(default.appwrapper, vec![toolchain::APPWRAPPER_DEFAULT]);
        assert_eq!(default.reference, default_reference());

        let variant = spec(&["v1.35.4", toolchain::KUBERNETES], &["v0.17.0", "v0.18.4"]);
        assert_eq!(variant.kubernetes, vec![toolchain::KUBERNETES, "v1.35.4"]);
        assert_eq!(
            variant.kueue,
            vec![toolchain::KUEUE_DEFAULT, "v0.18.4", "v0.17.0"]
        );
        let names: Vec<String> = variant.components().iter().map(|c| c.to_string()).collect();
        assert_eq!(
            names[..4],
            [
                format!("etcd {}", toolchain::ETCD),
                format!("kwok {}", toolchain::KWOK),
                format!("kubectl {}", toolchain::KUBERNETES),
                format!("kubernetes {}", toolchain::KUBERNETES),
            ]
        );
        assert_eq!(names.len(), 3 + 2 + 3 + 1);
    }

    #[test]
    fn a_tree_keeps_links_and_modes_and_makes_files_readable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("crd/bases")).unwrap();
        let file = dir.path().join("crd/bases/a.yaml");
        std::fs::write(&file, "a").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o400)).unwrap();
        std::os::unix::fs::symlink("crd", dir.path().join("link")).unwrap();
        let entries = tree(dir.path(), Path::new("/opt/x")).unwrap();
        assert!(entries.contains(&Entry::File {
            path: "/opt/x/crd/bases/a.yaml".into(),
            source: file,
            mode: 0o444,
        }));
        assert!(entries.contains(&Entry::Symlink {
            path: "/opt/x/link".into(),
            target: "crd".into(),
        }));
        assert!(entries.contains(&Entry::Dir {
            path: "/opt/x/crd/bases".into(),
            mode: 0o755,
        }));
        let paths: Vec<&str> = entries.iter().map(Entry::path).collect();
        assert_eq!(
            paths,
            [
                "/opt/x",
                "/opt/x/crd",
                "/opt/x/crd/bases",
                "/opt/x/crd/bases/a.yaml",
                "/opt/x/link"
            ],
            "each directory before what it holds, in name order"
        );
    }

    #[test]
    fn a_component_not_built_is_named_with_the_command_that_builds_it() {
        let cache = tempfile::tempdir().unwrap();
        let e = runner_image(&spec(&[], &[]), cache.path()).unwrap_err();
        assert!(
            e.to_string().contains("etcd") && e.to_string().contains("awconf toolchain build"),
            "{e}"
        );
    }
}
