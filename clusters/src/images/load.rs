//! Loading an image archive into a cluster's container runtime, without a registry.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::ImageError;

/// Where an archive goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loader {
    /// The real node's containerd, in the namespace the CRI plugin uses.
    Containerd { address: PathBuf },
    /// A kind cluster's nodes.
    Kind { cluster: String },
    /// A k3d cluster's nodes.
    K3d { cluster: String },
    /// k3s imports the archives in its agent's images directory
    /// (`/var/lib/rancher/k3s/agent/images`).
    K3sImagesDir { dir: PathBuf },
}

impl Loader {
    pub const K3S_IMAGES_DIR: &str = "/var/lib/rancher/k3s/agent/images";

    /// The command that loads `archive`, or `None` when loading is a file copy (k3s).
    pub fn command(&self, archive: &Path) -> Option<Vec<String>> {
        let archive = archive.display().to_string();
        match self {
            Loader::Containerd { address } => Some(vec![
                "ctr".into(),
                format!("--address={}", address.display()),
                "--namespace=k8s.io".into(),
                "images".into(),
                "import".into(),
                archive,
            ]),
            Loader::Kind { cluster } => Some(vec![
                "kind".into(),
                "load".into(),
                "image-archive".into(),
                archive,
                format!("--name={cluster}"),
            ]),
            Loader::K3d { cluster } => Some(vec![
                "k3d".into(),
                "image".into(),
                "import".into(),
                archive,
                format!("--cluster={cluster}"),
            ]),
            Loader::K3sImagesDir { .. } => None,
        }
    }

    /// Loads `archive`; the image can then run with `imagePullPolicy: Never`.
    pub fn load(&self, archive: &Path) -> Result<(), ImageError> {
        if let Loader::K3sImagesDir { dir } = self {
            let name = archive
                .file_name()
                .ok_or_else(|| ImageError::Input(format!("{}: no file name", archive.display())))?;
            std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::copy(archive, dir.join(name)))
                .map_err(|e| ImageError::Tool(format!("copy into {}: {e}", dir.display())))?;
            return Ok(());
        }
        let Some(argv) = self.command(archive) else {
            return Ok(());
        };
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .map_err(|e| ImageError::Tool(format!("cannot run {}: {e}", argv[0])))?;
        if !out.status.success() {
            return Err(ImageError::Tool(format!(
                "`{}` failed ({}): {}{}",
                argv.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    }
}

/// `containerd:SOCKET`, `kind:CLUSTER`, `k3d:CLUSTER` or `k3s-dir:DIRECTORY`, as
/// `--load-images` takes it.
impl std::str::FromStr for Loader {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let usage = "expected containerd:SOCKET, kind:CLUSTER, k3d:CLUSTER or k3s-dir:DIRECTORY";
        let (kind, value) = text
            .split_once(':')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(|| format!("--load-images {text:?}: {usage}"))?;
        match kind {
            "containerd" => Ok(Loader::Containerd {
                address: value.into(),
            }),
            "kind" => Ok(Loader::Kind {
                cluster: value.into(),
            }),
            "k3d" => Ok(Loader::K3d {
                cluster: value.into(),
            }),
            "k3s-dir" => Ok(Loader::K3sImagesDir { dir: value.into() }),
            other => Err(format!("--load-images: unknown loader {other:?}; {usage}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaders_parse_from_their_flag() {
        let cases: &[(&str, Result<Loader, &str>)] = &[
            (
                "containerd:/w/node/containerd.sock",
                Ok(Loader::Containerd {
                    address: "/w/node/containerd.sock".into(),
                }),
            ),
            (
                "kind:awconf",
                Ok(Loader::Kind {
                    cluster: "awconf".into(),
                }),
            ),
            (
                "k3d:ci",
                Ok(Loader::K3d {
                    cluster: "ci".into(),
                }),
            ),
            (
                "k3s-dir:/var/lib/rancher/k3s/agent/images",
                Ok(Loader::K3sImagesDir {
                    dir: Loader::K3S_IMAGES_DIR.into(),
                }),
            ),
            ("docker:x", Err("unknown loader \"docker\"")),
            ("kind:", Err("expected containerd:SOCKET")),
            ("kind", Err("expected containerd:SOCKET")),
        ];
        for (text, want) in cases {
            match (text.parse::<Loader>(), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want),
                (Err(got), Err(want)) => assert!(got.contains(want), "{text}: {got}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn each_provider_has_its_import_command() {
        let archive = Path::new("/tmp/busybox.tar");
        assert_eq!(
            Loader::Containerd {
                address: "/w/node/containerd.sock".into()
            }
            .command(archive)
            .unwrap()
            .join(" "),
            "ctr --address=/w/node/containerd.sock --namespace=k8s.io images import /tmp/busybox.tar"
        );
        assert_eq!(
            Loader::Kind {
                cluster: "awconf".into()
            }
            .command(archive)
            .unwrap()
            .join(" "),
            "kind load image-archive /tmp/busybox.tar --name=awconf"
        );
        assert_eq!(
            Loader::K3d {
                cluster: "awconf".into()
            }
            .command(archive)
            .unwrap()
            .join(" "),
            "k3d image import /tmp/busybox.tar --cluster=awconf"
        );
        assert_eq!(
            Loader::K3sImagesDir {
                dir: Loader::K3S_IMAGES_DIR.into()
            }
            .command(archive),
            None
        );
    }

    #[test]
    fn the_k3s_loader_copies_the_archive_into_the_images_directory() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("x.tar");
        std::fs::write(&archive, b"archive").unwrap();
        let images = dir.path().join("agent/images");
        Loader::K3sImagesDir {
            dir: images.clone(),
        }
        .load(&archive)
        .unwrap();
        assert_eq!(std::fs::read(images.join("x.tar")).unwrap(), b"archive");
    }
}
