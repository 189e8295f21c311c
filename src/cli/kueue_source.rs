//! `--kueue`, `--kueue-source`, `--kueue-binary` and `--kueue-crds`: which Kueue runs.

use std::path::PathBuf;

use clap::Args;
use clusters::kueue::{KueueSource, KueueVersion};

#[derive(Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct KueueArgs {
    /// Kueue release to build from the Go module proxy (default: the pinned one).
    #[arg(long, env = "AWCONF_KUEUE_VERSION", value_name = "VERSION")]
    pub kueue: Option<String>,
    /// A local Kueue checkout, built with `go build ./cmd/kueue`; its CRDs, webhooks and
    /// release manifests come from its `config/`.
    #[arg(long, env = "AWCONF_KUEUE_SOURCE", value_name = "DIR", conflicts_with_all = ["kueue", "kueue_binary"])]
    pub kueue_source: Option<PathBuf>,
    /// A Kueue manager binary built elsewhere; needs --kueue-crds. Its manifests and feature
    /// gates are those of --kueue (the release it is closest to).
    #[arg(
        long,
        env = "AWCONF_KUEUE_BINARY",
        value_name = "PATH",
        requires = "kueue_crds"
    )]
    pub kueue_binary: Option<PathBuf>,
    /// The CRDs that go with --kueue-binary (a directory of YAML files).
    #[arg(
        long,
        env = "AWCONF_KUEUE_CRDS",
        value_name = "DIR",
        requires = "kueue_binary"
    )]
    pub kueue_crds: Option<PathBuf>,
}

impl KueueArgs {
    /// The Kueue these flags name; `default` (a release tag) when none is given.
    pub fn source(&self, default: &str) -> anyhow::Result<KueueSource> {
        let tag = self.kueue.as_deref().unwrap_or(default);
        let release = |tag: &str| KueueVersion::parse(tag).map_err(anyhow::Error::msg);
        Ok(
            match (&self.kueue_source, &self.kueue_binary, &self.kueue_crds) {
                (Some(dir), _, _) => {
                    anyhow::ensure!(
                        dir.is_dir(),
                        "--kueue-source {}: not a directory",
                        dir.display()
                    );
                    KueueSource::Checkout(std::path::absolute(dir)?)
                }
                (None, Some(binary), Some(crds)) => {
                    anyhow::ensure!(
                        binary.is_file(),
                        "--kueue-binary {}: no such file",
                        binary.display()
                    );
                    anyhow::ensure!(
                        crds.is_dir(),
                        "--kueue-crds {}: not a directory",
                        crds.display()
                    );
                    KueueSource::Binary {
                        binary: std::path::absolute(binary)?,
                        crds: std::path::absolute(crds)?,
                        version: release(tag)?,
                    }
                }
                _ => KueueSource::Release(release(tag)?),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_name_one_kueue() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("kueue");
        std::fs::write(&binary, b"").unwrap();
        let release = KueueArgs::default().source("v0.19.2").unwrap();
        assert_eq!(release, KueueSource::Release(KueueVersion(0, 19, 2)));
        let checkout = KueueArgs {
            kueue_source: Some(dir.path().into()),
            ..KueueArgs::default()
        };
        assert_eq!(
            checkout.source("v0.19.2").unwrap(),
            KueueSource::Checkout(dir.path().into())
        );
        let built = KueueArgs {
            kueue: Some("v0.18.4".into()),
            kueue_binary: Some(binary.clone()),
            kueue_crds: Some(dir.path().into()),
            ..KueueArgs::default()
        };
        assert_eq!(
            built.source("v0.19.2").unwrap(),
            KueueSource::Binary {
                binary,
                crds: dir.path().into(),
                version: KueueVersion(0, 18, 4)
            }
        );
        let missing = KueueArgs {
            kueue_source: Some(dir.path().join("nope")),
            ..KueueArgs::default()
        };
        assert!(
            missing
                .source("v0.19.2")
                .unwrap_err()
                .to_string()
                .contains("not a directory")
        );
        let bad_tag = KueueArgs {
            kueue: Some("main".into()),
            ..KueueArgs::default()
        };
        assert!(bad_tag.source("v0.19.2").is_err());
    }
}
