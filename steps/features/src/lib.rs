//! The executable specification as text: the feature files of a run (the built-in ones,
//! compiled into awconf so that an installed binary needs no source tree, and a user's), the
//! behaviours they check ([`spec`]), the AppWrapper annotations they set ([`annotations`]) and
//! the version tags they carry ([`version_tags`]). Before a run starts anything the features
//! are all parsed and every step is checked against the step definitions ([`load_checked`]).
//! Nothing here runs a scenario: the steps crate does.

pub mod annotations;
mod behaviours;
mod check;
mod definitions;
mod feature_set;
mod files;
mod load;
mod nearest;
mod problem;
pub mod spec;
pub mod version_tags;

use cucumber::feature::Ext as _;
use cucumber::gherkin::Feature;

pub use check::check;
pub use definitions::{StepDefinition, closest, containing, keyword_name, matching, suggestions};
pub use feature_set::FeatureSet;
use files::is_built_in;
pub use files::{BUILT_IN, built_in_path, export, file_of};
pub use load::{load, parse_text, scenarios_of};
pub use nearest::distance as phrase_distance;
pub use problem::{InvalidFeatures, Problem};

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
    use std::path::Path;

    use super::*;

    #[test]
    fn every_feature_of_the_source_tree_is_built_in() {
        let mut files: Vec<String> = std::fs::read_dir("../../features")
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
