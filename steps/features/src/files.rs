//! The built-in features, compiled into awconf so that an installed binary needs no source
//! tree, the paths they are named by, and the file any feature was read from.

use std::path::{Path, PathBuf};

use cucumber::gherkin::Feature;

macro_rules! feature {
    ($name:literal) => {
        (
            concat!($name, ".feature"),
            include_str!(concat!("../../../features/", $name, ".feature")),
        )
    };
}

/// Where a feature was read from, or its name when it was not read from a file.
pub fn file_of(feature: &Feature) -> PathBuf {
    feature
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from(&feature.name))
}

/// (file name, text) of every built-in feature.
pub const BUILT_IN: &[(&str, &str)] = &[
    feature!("components"),
    feature!("controller_upgrade"),
    feature!("deletion"),
    feature!("extensions"),
    feature!("fault_tolerance"),
    feature!("kueue"),
    feature!("managed_by"),
    feature!("phases"),
    feature!("restart"),
    feature!("webhook"),
];

/// The path a built-in feature is named by in reports and problems: where it is in the
/// source tree, and where `awconf features export features` writes it.
pub fn built_in_path(name: &str) -> PathBuf {
    Path::new("features").join(name)
}

pub(crate) fn is_built_in(feature: &Feature) -> bool {
    BUILT_IN
        .iter()
        .any(|(name, _)| feature.path.as_deref() == Some(built_in_path(name).as_path()))
}

/// Writes the built-in features into `dir` (created if need be; files of the same names are
/// overwritten, nothing else is touched) and returns their paths.
pub fn export(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    BUILT_IN
        .iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text)?;
            Ok(path)
        })
        .collect()
}
