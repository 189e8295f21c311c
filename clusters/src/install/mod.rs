//! Installing Kueue, KWOK and the controller under test *into* a cluster, as their users
//! do: release manifests, images loaded without a registry, and waits until each serves.
//! Every provider shares it; the local cluster with a real node proves it here.

pub mod apply;
pub mod controller;
pub mod kueue;
pub mod kwok;
pub mod logs;
pub mod manifests;
pub mod ready;
pub mod scale;

use std::path::PathBuf;

use crate::images::{self, Image, ImageError, Loader};

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("rendering the manifests: {0}")]
    Render(String),
    #[error("applying {0}: {1}")]
    Apply(String, kube::Error),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{what} was not ready within {seconds} s: {why}")]
    NotReady {
        what: String,
        seconds: u64,
        why: String,
    },
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error(transparent)]
    Build(#[from] crate::toolchain::BuildError),
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("{0}")]
    Other(String),
}

/// What `--install` puts into the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    Kueue,
    Kwok,
    Controller,
}

impl Part {
    pub const ALL: [Part; 3] = [Part::Kueue, Part::Kwok, Part::Controller];

    pub fn name(self) -> &'static str {
        match self {
            Part::Kueue => "kueue",
            Part::Kwok => "kwok",
            Part::Controller => "controller",
        }
    }
}

/// `kueue,kwok,controller` (any subset, any order) into the parts in install order: Kueue
/// first (with the AppWrapper CRD), the controller last.
pub fn parse_parts(text: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let part = Part::ALL
            .into_iter()
            .find(|p| p.name() == word)
            .ok_or_else(|| {
                format!("--install: unknown component {word:?}; expected a comma-separated subset of kueue,kwok,controller")
            })?;
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    if parts.is_empty() {
        return Err("--install: name at least one of kueue,kwok,controller".into());
    }
    parts.sort();
    Ok(parts)
}

/// Where an install goes: the cluster's API, how images reach its nodes, and where the
/// pinned binaries and the image archives live.
#[derive(Clone)]
pub struct Target {
    pub client: kube::Client,
    pub loader: Loader,
    pub cache: PathBuf,
    /// Image archives are written here before loading.
    pub work_dir: PathBuf,
}

impl Target {
    /// Writes `image` as an archive and loads it into the cluster's runtime.
    pub async fn load(&self, image: Image, file: &str) -> Result<String, InstallError> {
        let reference = image.reference.clone();
        let dir = self.work_dir.join("images");
        let loader = self.loader.clone();
        let file = file.to_string();
        tokio::task::spawn_blocking(move || -> Result<(), ImageError> {
            let written = images::write(&image, &dir, &file)?;
            loader.load(&written.path)
        })
        .await
        .map_err(|e| InstallError::Other(format!("loading {reference}: {e}")))??;
        Ok(reference)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_come_in_install_order_and_unknown_ones_are_named() {
        let cases: &[(&str, Result<Vec<Part>, &str>)] = &[
            (
                "controller,kwok,kueue",
                Ok(vec![Part::Kueue, Part::Kwok, Part::Controller]),
            ),
            ("kueue, kueue", Ok(vec![Part::Kueue])),
            ("kwok", Ok(vec![Part::Kwok])),
            ("kueue,jobset", Err("unknown component \"jobset\"")),
            ("", Err("name at least one")),
        ];
        for (text, want) in cases {
            match (parse_parts(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want, "{text}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{text}: {got}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }
}
