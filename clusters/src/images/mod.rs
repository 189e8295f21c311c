//! Images without a registry: a binary (our controller, Kueue, KWOK) or a small root file
//! system (busybox) becomes an image archive that a loader puts into a cluster's runtime.

pub mod archive;
pub mod contents;
pub mod load;
pub mod runner;

use std::path::{Path, PathBuf};

pub use archive::{Entry, Image, Written};
pub use contents::{BUSYBOX, binary_image, binary_image_at, busybox_image, pause_image};
pub use load::Loader;
pub use runner::{RunnerSpec, runner_image};

use crate::toolchain::{self, Component};

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Tool(String),
    #[error("writing the image archive {0}: {1}")]
    Write(String, std::io::Error),
    #[error(transparent)]
    Build(#[from] toolchain::BuildError),
}

/// The busybox image every real-node test can run.
pub const BUSYBOX_IMAGE: &str = "awconf.local/busybox:1";

/// The sandbox image of the real node, tagged with the Kubernetes version its source came from.
pub fn pause_reference() -> String {
    format!("awconf.local/pause:{}", toolchain::KUBERNETES)
}

/// Writes `image` as `<dir>/<file>.tar`.
pub fn write(image: &Image, dir: &Path, file: &str) -> Result<Written, ImageError> {
    let path = dir.join(format!("{file}.tar"));
    std::fs::create_dir_all(dir)
        .and_then(|_| image.write_archive(&path))
        .map_err(|e| ImageError::Write(path.display().to_string(), e))
}

/// The static pause binary, compiled once per Kubernetes version into the cache from the
/// pinned module's own `build/pause/linux/pause.c`.
pub fn pause_binary(cache: &Path) -> Result<PathBuf, ImageError> {
    let dir = cache.join("bin").join("pause").join(toolchain::KUBERNETES);
    let binary = dir.join("pause");
    if binary.is_file() {
        return Ok(binary);
    }
    let source = toolchain::module_source(
        &Component::kubernetes(toolchain::KUBERNETES),
        cache,
        "k8s.io/kubernetes",
    )?
    .join("build/pause/linux/pause.c");
    std::fs::create_dir_all(&dir).map_err(|e| ImageError::Write(dir.display().to_string(), e))?;
    let partial = dir.join("pause.partial");
    contents::compile_pause(&source, &partial)?;
    std::fs::rename(&partial, &binary)
        .map_err(|e| ImageError::Write(binary.display().to_string(), e))?;
    Ok(binary)
}
