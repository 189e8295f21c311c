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
pub mod reference;
pub mod resync;
pub mod scale;

use std::path::PathBuf;
use std::time::Duration;

use crate::images::{self, Image, ImageError, Loader};
use crate::nodes::NodeShape;

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
    #[error("{what} cannot start, and waiting will not change that: {why}")]
    Stuck { what: String, why: String },
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
    /// Writes `image` as an archive, loads it into the cluster's runtime and removes the
    /// archive (the runtime keeps its own copy; a controller image is hundreds of MiB).
    pub async fn load(&self, image: Image, file: &str) -> Result<String, InstallError> {
        let reference = image.reference.clone();
        let dir = self.work_dir.join("images");
        let loader = self.loader.clone();
        let file = file.to_string();
        tokio::task::spawn_blocking(move || -> Result<(), ImageError> {
            let written = images::write(&image, &dir, &file)?;
            let loaded = loader.load(&written.path);
            let _ = std::fs::remove_file(&written.path);
            loaded
        })
        .await
        .map_err(|e| InstallError::Other(format!("loading {reference}: {e}")))??;
        Ok(reference)
    }
}

/// What to install, with which settings.
#[derive(Clone, Debug)]
pub struct Request {
    pub parts: Vec<Part>,
    pub kueue: crate::kueue::KueueSource,
    /// Fake nodes KWOK serves (with [`Part::Kwok`]).
    pub fake_nodes: usize,
    pub node_shape: NodeShape,
    /// Our controller's binary, made into an image and loaded; `None` installs the image
    /// that `controller` names as it is.
    pub controller_binary: Option<PathBuf>,
    pub controller: controller::Settings,
}

/// Installs the requested parts, reporting each as it starts and ends; returns how long each
/// took, in install order. Kueue and KWOK do not need each other and install at once (on one
/// real node that took the run's set-up from 33 s to 23-30 s); the controller comes after
/// them.
pub async fn install(
    target: &Target,
    request: &Request,
    progress: &(dyn Fn(String) + Sync),
) -> Result<Vec<(Part, Duration)>, InstallError> {
    let (together, after): (Vec<Part>, Vec<Part>) = request
        .parts
        .iter()
        .partition(|part| **part != Part::Controller);
    let mut timings = futures::future::try_join_all(
        together
            .into_iter()
            .map(|part| install_part(target, request, part, progress)),
    )
    .await?;
    for part in after {
        timings.push(install_part(target, request, part, progress).await?);
    }
    Ok(timings)
}

async fn install_part(
    target: &Target,
    request: &Request,
    part: Part,
    progress: &(dyn Fn(String) + Sync),
) -> Result<(Part, Duration), InstallError> {
    let took = match part {
        Part::Kueue => {
            progress(format!(
                "installing Kueue {} from its release manifests",
                request.kueue.label()
            ));
            kueue::install(target, &request.kueue).await?
        }
        Part::Kwok => {
            progress(format!(
                "installing KWOK with {} fake nodes",
                request.fake_nodes
            ));
            kwok::install(target, request.fake_nodes, &request.node_shape).await?
        }
        Part::Controller => {
            progress("installing the controller from its install manifests".into());
            let settings = request.controller.clone();
            match &request.controller_binary {
                Some(binary) => controller::install(target, binary, settings).await?,
                None => controller::install_image(target, settings).await?,
            }
        }
    };
    progress(format!(
        "{} ready in {:.0}s",
        part.name(),
        took.as_secs_f64()
    ));
    Ok((part, took))
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
