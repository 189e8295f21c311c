//! The feature files of a run: the built-in ones, compiled into awconf so that an installed
//! binary needs no source tree, and a user's. Before a run starts anything they are all
//! parsed and every step is checked against the step definitions ([`load_checked`]).

mod behaviours;
mod check;
mod definitions;
mod load;
mod nearest;
mod problem;

use std::path::{Path, PathBuf};

use cucumber::feature::Ext as _;
use cucumber::gherkin::Feature;

pub use check::{check, closest};
pub use definitions::{StepDefinition, containing, keyword_name, matching, suggestions};
pub use load::{load, parse_text};
pub use nearest::distance as phrase_distance;
pub use problem::{InvalidFeatures, Problem};

use crate::options::FeatureSet;

macro_rules! feature {
    ($name:literal) => {
        (
            concat!($name, ".feature"),
            include_str!(concat!("../../../features/", $name, ".feature")),
        )
    };
}

/// Where a feature was read from, or its name when it was not read from a file.
pub(crate) fn file_of(feature: &Feature) -> PathBuf {
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

/// The features of `set`, parsed, each step matching exactly one of `definitions` and each
/// behaviour tag naming a behaviour of the specification; when the set holds the built-in
/// features, every behaviour is checked by one of them or says why not. Otherwise every
/// problem of every file.
pub fn load_checked(
    set: &FeatureSet,
    definitions: &[StepDefinition],
) -> Result<Vec<Feature>, InvalidFeatures> {
    let (features, mut problems) = load(set);
    problems.extend(check(&features, definitions));
    let spec = crate::spec::built_in();
    problems.extend(behaviours::unknown(&features, spec));
    if set.includes_built_in() {
        let built_in: Vec<Feature> = features
            .iter()
            .filter(|f| is_built_in(f))
            .cloned()
            .collect();
        problems.extend(behaviours::coverage(
            &crate::spec::by_behaviour(&built_in),
            spec,
        ));
    }
    problems.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    if problems.is_empty() {
        Ok(features)
    } else {
        Err(InvalidFeatures(problems))
    }
}

fn is_built_in(feature: &Feature) -> bool {
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

/// `awconf features list`: one line per feature (file, scenarios, name), then the total.
/// Scenario Outlines count once per example, as they run.
pub fn listing(features: &[Feature]) -> Vec<String> {
    let width = features
        .iter()
        .map(|f| display_path(f).len())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<String> = features
        .iter()
        .map(|f| {
            format!(
                "{:width$}  {:>3} scenarios  {}",
                display_path(f),
                f.count_scenarios(),
                f.name
            )
        })
        .collect();
    let total: usize = features.iter().map(|f| f.count_scenarios()).sum();
    lines.push(format!(
        "total: {total} scenarios in {} features",
        features.len()
    ));
    lines
}

fn display_path(feature: &Feature) -> String {
    feature
        .path
        .as_deref()
        .map_or_else(|| feature.name.clone(), |p| p.display().to_string())
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

    /// A citation in a built-in feature (a tag, a comment or a description) names a behaviour
    /// of the specification; none points into a document the repository does not have.
    #[test]
    fn no_citation_of_the_built_in_features_dangles() {
        let id = regex::Regex::new(r"\b[A-Z]{2,}(?:-[A-Z0-9]+)+\b").unwrap();
        let spec = crate::spec::built_in();
        for (name, text) in BUILT_IN {
            for (n, line) in text.lines().enumerate() {
                assert!(!line.contains('§'), "{name}:{}: {line}", n + 1);
                for cited in id.find_iter(line) {
                    assert!(
                        spec.find(cited.as_str()).is_some(),
                        "{name}:{}: {} is no behaviour of {}",
                        n + 1,
                        cited.as_str(),
                        crate::spec::PATH
                    );
                }
            }
        }
    }

    #[test]
    fn export_writes_the_built_in_features_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.feature"), "Feature: mine").unwrap();
        let written = export(dir.path()).unwrap();
        assert_eq!(written.len(), BUILT_IN.len());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            BUILT_IN.len() + 1
        );
        let phases = std::fs::read_to_string(dir.path().join("phases.feature")).unwrap();
        assert!(phases.starts_with("Feature: Phases"));
    }

    #[test]
    fn the_listing_counts_scenarios_with_outlines_expanded() {
        let plain = parse_text(
            Path::new("features/a.feature"),
            "Feature: A\n  Scenario: one\n    Given x\n  Scenario: two\n    Given y\n",
        )
        .unwrap();
        let outline = parse_text(
            Path::new("mine/outline.feature"),
            "Feature: B\n  Scenario Outline: o <n>\n    Given <n>\n    Examples:\n      | n |\n      | 1 |\n      | 2 |\n      | 3 |\n",
        )
        .unwrap();
        assert_eq!(
            listing(&[plain, outline]),
            [
                "features/a.feature      2 scenarios  A",
                "mine/outline.feature    3 scenarios  B",
                "total: 5 scenarios in 2 features",
            ]
        );
    }
}
