//! The suite's feature files, compiled into awconf so that an installed binary needs no source
//! tree; a run without `--features` writes them out and runs them.

use std::path::{Path, PathBuf};

macro_rules! feature {
    ($name:literal) => {
        (
            concat!($name, ".feature"),
            include_str!(concat!("../../features/", $name, ".feature")),
        )
    };
}

/// (file name, text) of every built-in feature.
pub const BUILT_IN: &[(&str, &str)] = &[
    feature!("components"),
    feature!("deletion"),
    feature!("extensions"),
    feature!("fault_tolerance"),
    feature!("kueue"),
    feature!("managed_by"),
    feature!("phases"),
    feature!("restart"),
    feature!("webhook"),
];

/// Writes the built-in features into `dir` (replacing what an earlier run left there) and
/// returns it.
pub fn write_built_in(dir: &Path) -> std::io::Result<PathBuf> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::create_dir_all(dir)?;
    for (name, text) in BUILT_IN {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_of_the_source_tree_is_built_in() {
        let mut files: Vec<String> = std::fs::read_dir("../features")
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let built_in: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
        assert_eq!(files, built_in);
    }

    #[test]
    fn writing_replaces_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let features = dir.path().join("features");
        std::fs::create_dir_all(&features).unwrap();
        std::fs::write(features.join("stale.feature"), "Feature: stale").unwrap();
        write_built_in(&features).unwrap();
        assert_eq!(
            std::fs::read_dir(&features).unwrap().count(),
            BUILT_IN.len()
        );
    }
}
