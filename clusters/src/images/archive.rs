//! An image written as a docker-archive tarball (what `docker save` wrote for years): every
//! loader we use accepts it — `ctr images import`, `kind load image-archive`, `k3d image
//! import`, k3s's images directory, `docker load` and `skopeo copy docker-archive:`.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// One thing in the image's file system. Parent directories are added as needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A host file copied in (symlinks followed), with `mode`.
    File {
        path: String,
        source: PathBuf,
        mode: u32,
    },
    Bytes {
        path: String,
        data: Vec<u8>,
        mode: u32,
    },
    Symlink {
        path: String,
        target: String,
    },
    Dir {
        path: String,
        mode: u32,
    },
}

impl Entry {
    pub(crate) fn path(&self) -> &str {
        match self {
            Entry::File { path, .. }
            | Entry::Bytes { path, .. }
            | Entry::Symlink { path, .. }
            | Entry::Dir { path, .. } => path,
        }
    }
}

/// An image to write: its name, its files, and how it starts.
#[derive(Clone, Debug, Default)]
pub struct Image {
    /// `registry/name:tag`, with a registry so no runtime prefixes `docker.io/library/`.
    pub reference: String,
    /// The first layer.
    pub entries: Vec<Entry>,
    /// Further layers, each applied over the ones before it: an image whose parts change at
    /// different paces (a tool and the releases it carries) shares its unchanged layers.
    pub layers: Vec<Vec<Entry>>,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    /// `uid:gid` the container runs as; empty is root. Release manifests that say
    /// `runAsNonRoot` need a numeric user here, as distroless's `nonroot` gives them.
    pub user: String,
    /// The working directory; empty is `/`.
    pub working_dir: String,
}

/// What was written, for tests and for the loaders' messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub path: PathBuf,
    /// `sha256:<hex>` of the first uncompressed layer (the config's first diff ID).
    pub layer_digest: String,
    /// `sha256:<hex>` of every layer, the first one first.
    pub layer_digests: Vec<String>,
    /// `sha256:<hex>` of the config, which is the image ID.
    pub config_digest: String,
}

pub const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl Image {
    /// Writes the archive to `path`.
    pub fn write_archive(&self, path: &Path) -> std::io::Result<Written> {
        let file = std::fs::File::create(path)?;
        let mut archive = tar::Builder::new(std::io::BufWriter::new(file));
        let mut layer_hexes = Vec::new();
        // One layer in memory at a time: a runner image's layers are hundreds of MiB each.
        for entries in std::iter::once(&self.entries).chain(&self.layers) {
            let layer = self.layer(entries)?;
            let layer_hex = hex(&Sha256::digest(&layer));
            append_dir(&mut archive, &format!("{layer_hex}/"), 0o755)?;
            append_bytes(
                &mut archive,
                &format!("{layer_hex}/layer.tar"),
                &layer,
                0o644,
            )?;
            layer_hexes.push(layer_hex);
        }
        let config = self.config(&layer_hexes);
        let config_hex = hex(&Sha256::digest(&config));
        let layers: Vec<String> = layer_hexes
            .iter()
            .map(|h| format!("{h}/layer.tar"))
            .collect();
        let manifest = serde_json::to_vec(&serde_json::json!([{
            "Config": format!("{config_hex}.json"),
            "RepoTags": [self.reference],
            "Layers": layers,
        }]))?;
        append_bytes(&mut archive, &format!("{config_hex}.json"), &config, 0o644)?;
        append_bytes(&mut archive, "manifest.json", &manifest, 0o644)?;
        archive.into_inner()?.flush()?;
        let layer_digests: Vec<String> =
            layer_hexes.iter().map(|h| format!("sha256:{h}")).collect();
        Ok(Written {
            path: path.to_path_buf(),
            layer_digest: layer_digests[0].clone(),
            layer_digests,
            config_digest: format!("sha256:{config_hex}"),
        })
    }

    /// A layer: a tar of the entries, parents first, owned by root, dated at the epoch so
    /// that the same inputs give the same digest.
    fn layer(&self, entries: &[Entry]) -> std::io::Result<Vec<u8>> {
        let mut archive = tar::Builder::new(Vec::new());
        let mut seen = std::collections::BTreeSet::new();
        for entry in entries {
            let path = entry.path().trim_start_matches('/');
            for parent in parents(path) {
                if seen.insert(parent.clone()) {
                    append_dir(&mut archive, &format!("{parent}/"), 0o755)?;
                }
            }
            if !seen.insert(path.to_string()) {
                return Err(std::io::Error::other(format!(
                    "{}: {path} is in the image twice",
                    self.reference
                )));
            }
            match entry {
                Entry::File { source, mode, .. } => {
                    let data = std::fs::read(source).map_err(|e| {
                        std::io::Error::new(e.kind(), format!("{}: {e}", source.display()))
                    })?;
                    append_bytes(&mut archive, path, &data, *mode)?;
                }
                Entry::Bytes { data, mode, .. } => append_bytes(&mut archive, path, data, *mode)?,
                Entry::Symlink { target, .. } => {
                    let mut header = header(tar::EntryType::Symlink, 0o777, 0);
                    archive.append_link(&mut header, path, target)?;
                }
                Entry::Dir { mode, .. } => append_dir(&mut archive, &format!("{path}/"), *mode)?,
            }
        }
        archive.into_inner()
    }

    fn config(&self, layer_hexes: &[String]) -> Vec<u8> {
        let env = if self.env.is_empty() {
            vec![DEFAULT_PATH.to_string()]
        } else {
            self.env.clone()
        };
        let config = serde_json::json!({
            "architecture": go_arch(std::env::consts::ARCH),
            "os": "linux",
            "created": "1970-01-01T00:00:00Z",
            "config": {
                "Entrypoint": self.entrypoint,
                "Cmd": self.cmd,
                "Env": env,
                "User": self.user,
                "WorkingDir": if self.working_dir.is_empty() { "/" } else { &self.working_dir },
            },
            "rootfs": {
                "type": "layers",
                "diff_ids": layer_hexes.iter().map(|h| format!("sha256:{h}")).collect::<Vec<_>>(),
            },
            "history": layer_hexes
                .iter()
                .map(|_| serde_json::json!({"created": "1970-01-01T00:00:00Z", "created_by": "awconf"}))
                .collect::<Vec<_>>(),
        });
        // serde_json cannot fail on a Value built from strings.
        serde_json::to_vec(&config).unwrap_or_default()
    }
}

/// `a/b/c` -> `a`, `a/b`.
/// The OCI architecture (Go's `GOARCH`) of binaries built for `rust_arch`: the image carries
/// this machine's binaries, and a runtime refuses an image whose architecture is not the node's.
fn go_arch(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "loongarch64" => "loong64",
        other => other,
    }
}

fn parents(path: &str) -> Vec<String> {
    let parts: Vec<_> = path.split('/').filter(|p| !p.is_empty()).collect();
    (1..parts.len()).map(|n| parts[..n].join("/")).collect()
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(size);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header
}

fn append_bytes<W: Write>(
    archive: &mut tar::Builder<W>,
    path: &str,
    data: &[u8],
    mode: u32,
) -> std::io::Result<()> {
    let mut header = header(tar::EntryType::Regular, mode, data.len() as u64);
    archive.append_data(&mut header, path, data)
}

fn append_dir<W: Write>(
    archive: &mut tar::Builder<W>,
    path: &str,
    mode: u32,
) -> std::io::Result<()> {
    let mut header = header(tar::EntryType::Directory, mode, 0);
    archive.append_data(&mut header, path, std::io::empty())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read;

    use super::*;

    fn read_tar(bytes: &[u8]) -> BTreeMap<String, (tar::EntryType, Vec<u8>, Option<String>)> {
        let mut out = BTreeMap::new();
        for entry in tar::Archive::new(bytes).entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let kind = entry.header().entry_type();
            let link = entry.link_name().unwrap().map(|l| l.display().to_string());
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            out.insert(path, (kind, data, link));
        }
        out
    }

    #[test]
    fn the_archive_holds_a_manifest_a_config_and_one_layer_named_by_their_digests() {
        let dir = tempfile::tempdir().unwrap();
        let image = Image {
            reference: "awconf.local/hello:1".into(),
            entries: vec![
                Entry::Bytes {
                    path: "/bin/hello".into(),
                    data: b"#!/bin/sh\necho hi\n".to_vec(),
                    mode: 0o755,
                },
                Entry::Symlink {
                    path: "/bin/hi".into(),
                    target: "hello".into(),
                },
                Entry::Dir {
                    path: "/tmp".into(),
                    mode: 0o1777,
                },
            ],
            entrypoint: vec!["/bin/hello".into()],
            user: "65532:65532".into(),
            ..Default::default()
        };
        let written = image.write_archive(&dir.path().join("hello.tar")).unwrap();
        let outer = read_tar(&std::fs::read(&written.path).unwrap());

        let manifest: serde_json::Value =
            serde_json::from_slice(&outer["manifest.json"].1).unwrap();
        let layer_hex = written.layer_digest.strip_prefix("sha256:").unwrap();
        let config_hex = written.config_digest.strip_prefix("sha256:").unwrap();
        assert_eq!(manifest[0]["RepoTags"][0], "awconf.local/hello:1");
        assert_eq!(manifest[0]["Config"], format!("{config_hex}.json"));
        assert_eq!(manifest[0]["Layers"][0], format!("{layer_hex}/layer.tar"));

        let layer = &outer[&format!("{layer_hex}/layer.tar")].1;
        assert_eq!(hex(&Sha256::digest(layer)), layer_hex);
        let config_bytes = &outer[&format!("{config_hex}.json")].1;
        assert_eq!(hex(&Sha256::digest(config_bytes)), config_hex);
        let config: serde_json::Value = serde_json::from_slice(config_bytes).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"][0], written.layer_digest);
        assert_eq!(config["config"]["Entrypoint"][0], "/bin/hello");
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(config["os"], "linux");

        let files = read_tar(layer);
        assert_eq!(files["bin/"].0, tar::EntryType::Directory);
        assert_eq!(files["bin/hello"].1, b"#!/bin/sh\necho hi\n");
        assert_eq!(files["bin/hi"].2.as_deref(), Some("hello"));
        assert_eq!(files["tmp/"].0, tar::EntryType::Directory);
    }

    #[test]
    fn further_layers_follow_the_first_in_the_manifest_and_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let file = |path: &str, data: &[u8]| Entry::Bytes {
            path: path.into(),
            data: data.to_vec(),
            mode: 0o644,
        };
        let image = Image {
            reference: "awconf.local/layered:1".into(),
            entries: vec![file("/opt/a", b"a")],
            layers: vec![vec![file("/opt/b", b"b")], vec![file("/opt/a", b"c")]],
            working_dir: "/work".into(),
            ..Default::default()
        };
        let written = image.write_archive(&dir.path().join("l.tar")).unwrap();
        assert_eq!(written.layer_digests.len(), 3);
        assert_eq!(written.layer_digests[0], written.layer_digest);
        let outer = read_tar(&std::fs::read(&written.path).unwrap());
        let manifest: serde_json::Value =
            serde_json::from_slice(&outer["manifest.json"].1).unwrap();
        let config_hex = written.config_digest.strip_prefix("sha256:").unwrap();
        let config: serde_json::Value =
            serde_json::from_slice(&outer[&format!("{config_hex}.json")].1).unwrap();
        assert_eq!(config["config"]["WorkingDir"], "/work");
        for (i, digest) in written.layer_digests.iter().enumerate() {
            let hex = digest.strip_prefix("sha256:").unwrap();
            assert_eq!(manifest[0]["Layers"][i], format!("{hex}/layer.tar"));
            assert_eq!(&config["rootfs"]["diff_ids"][i], digest);
        }
        let last = written.layer_digests[2].strip_prefix("sha256:").unwrap();
        let files = read_tar(&outer[&format!("{last}/layer.tar")].1);
        assert_eq!(files["opt/a"].1, b"c");
        assert_eq!(config["history"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn the_same_image_gives_the_same_digests() {
        let dir = tempfile::tempdir().unwrap();
        let image = Image {
            reference: "awconf.local/x:1".into(),
            entries: vec![Entry::Bytes {
                path: "/x".into(),
                data: vec![1, 2, 3],
                mode: 0o644,
            }],
            ..Default::default()
        };
        let a = image.write_archive(&dir.path().join("a.tar")).unwrap();
        let b = image.write_archive(&dir.path().join("b.tar")).unwrap();
        assert_eq!(a.layer_digest, b.layer_digest);
        assert_eq!(a.config_digest, b.config_digest);
    }

    #[test]
    fn a_path_given_twice_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let twice = Entry::Dir {
            path: "/d".into(),
            mode: 0o755,
        };
        let image = Image {
            reference: "awconf.local/x:1".into(),
            entries: vec![twice.clone(), twice],
            ..Default::default()
        };
        assert!(image.write_archive(&dir.path().join("x.tar")).is_err());
    }

    #[test]
    fn the_image_is_for_the_architecture_its_binaries_were_built_for() {
        for (rust, go) in [
            ("x86_64", "amd64"),
            ("aarch64", "arm64"),
            ("s390x", "s390x"),
            ("riscv64", "riscv64"),
        ] {
            assert_eq!(go_arch(rust), go);
        }
    }

    #[test]
    fn parents_are_listed_outermost_first() {
        assert_eq!(parents("a/b/c"), vec!["a".to_string(), "a/b".to_string()]);
        assert!(parents("x").is_empty());
    }
}
