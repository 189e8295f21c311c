//! Which feature files a run reads: the built-in ones, a user's beside them, or a user's alone.

use std::path::{Path, PathBuf};

/// The feature files of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FeatureSet {
    /// The features compiled into awconf (the steps' `features::BUILT_IN`).
    #[default]
    BuiltIn,
    /// The built-in features and the `*.feature` files under a directory (`--features DIR`).
    BuiltInAnd(PathBuf),
    /// Only the `*.feature` files under a directory (`--only-features DIR`).
    Only(PathBuf),
}

impl FeatureSet {
    /// From `--features` and `--only-features` (or `AWCONF_FEATURES` and
    /// `AWCONF_ONLY_FEATURES`); at most one of them.
    pub fn from_dirs(extra: Option<PathBuf>, only: Option<PathBuf>) -> Result<Self, String> {
        match (extra, only) {
            (None, None) => Ok(FeatureSet::BuiltIn),
            (Some(dir), None) => Ok(FeatureSet::BuiltInAnd(dir)),
            (None, Some(dir)) => Ok(FeatureSet::Only(dir)),
            (Some(_), Some(_)) => Err(
                "--features (AWCONF_FEATURES) adds to the built-in features and --only-features \
                 (AWCONF_ONLY_FEATURES) replaces them: give one"
                    .to_string(),
            ),
        }
    }

    pub fn includes_built_in(&self) -> bool {
        !matches!(self, FeatureSet::Only(_))
    }

    /// The user's directory, if any.
    pub fn user_dir(&self) -> Option<&Path> {
        match self {
            FeatureSet::BuiltIn => None,
            FeatureSet::BuiltInAnd(dir) | FeatureSet::Only(dir) => Some(dir),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_pick_the_feature_set() {
        let dir = || Some(PathBuf::from("mine"));
        let cases = [
            (None, None, Ok(FeatureSet::BuiltIn)),
            (dir(), None, Ok(FeatureSet::BuiltInAnd("mine".into()))),
            (None, dir(), Ok(FeatureSet::Only("mine".into()))),
        ];
        for (extra, only, want) in cases {
            assert_eq!(FeatureSet::from_dirs(extra, only), want);
        }
        let both = FeatureSet::from_dirs(dir(), dir()).unwrap_err();
        assert!(both.contains("give one"), "{both}");
    }

    #[test]
    fn only_replaces_the_built_in_features() {
        let table = [
            (FeatureSet::BuiltIn, true, None),
            (FeatureSet::BuiltInAnd("d".into()), true, Some("d")),
            (FeatureSet::Only("d".into()), false, Some("d")),
        ];
        for (set, built_in, dir) in table {
            assert_eq!(set.includes_built_in(), built_in, "{set:?}");
            assert_eq!(set.user_dir(), dir.map(Path::new), "{set:?}");
        }
    }
}
