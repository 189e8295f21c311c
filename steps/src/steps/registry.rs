//! The step definitions the `#[given]`, `#[when]` and `#[then]` attributes of this folder
//! register for [`AwWorld`], as [`StepDefinition`]s: what `awconf features check` and a run's
//! plan match every step of the features against.

use cucumber::codegen::{StepConstructor as _, WorldInventory, inventory};
use cucumber::gherkin::StepType;
use cucumber::step::Location;
use regex::Regex;

use crate::features::{StepDefinition, keyword_name};
use crate::world::AwWorld;

/// The suite's step definitions, by keyword and regex.
pub fn registered() -> Vec<StepDefinition> {
    let mut definitions = Vec::new();
    let mut add = |keyword, (location, regex, _): (Location, fn() -> Regex, _)| {
        let location = format!("{}:{}", location.path, location.line);
        definitions.push(StepDefinition::at(keyword, regex(), location));
    };
    for step in inventory::iter::<<AwWorld as WorldInventory>::Given> {
        add(StepType::Given, step.inner());
    }
    for step in inventory::iter::<<AwWorld as WorldInventory>::When> {
        add(StepType::When, step.inner());
    }
    for step in inventory::iter::<<AwWorld as WorldInventory>::Then> {
        add(StepType::Then, step.inner());
    }
    definitions.sort_by_key(|d| (keyword_name(d.keyword), d.regex.as_str().to_string()));
    definitions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::{BUILT_IN, InvalidFeatures, containing, load_checked, matching};
    use crate::options::FeatureSet;

    /// A directory holding a user's `mine.feature` with `text`.
    fn users_feature(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.feature"), text).unwrap();
        dir
    }

    #[test]
    fn the_built_in_features_parse_and_every_step_has_a_definition() {
        let features =
            load_checked(&FeatureSet::BuiltIn, &registered()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(features.len(), BUILT_IN.len());
    }

    #[test]
    fn a_misspelt_step_of_a_users_feature_is_named_with_the_steps_it_resembles() {
        let dir = users_feature(
            "Feature: mine\n  Scenario: s\n    Given an AppWrapper \"a\" wrapping a Job with 1 pod\n    When it is submitted to the LocalQueue\n    Then it reaches phaze Running within 30 seconds\n",
        );
        let InvalidFeatures(problems) = load_checked(
            &FeatureSet::BuiltInAnd(dir.path().to_path_buf()),
            &registered(),
        )
        .unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        let shown = problems[0].to_string();
        let first_suggestion = shown.lines().nth(2).unwrap_or_default().trim();
        assert!(
            shown.starts_with(&format!(
                "{}:5: unknown step: Then it reaches phaze Running within 30 seconds",
                dir.path().join("mine.feature").display()
            )),
            "{shown}"
        );
        assert_eq!(
            first_suggestion, "Then it reaches phase … within N seconds",
            "{shown}"
        );
    }

    #[test]
    fn a_users_feature_may_name_only_known_behaviours_and_need_not_cover_them() {
        let dir = users_feature(
            "Feature: mine\n  @behaviour:FT-EXIT-TERMINL\n  Scenario: s\n    When it is submitted to the LocalQueue\n",
        );
        for set in [
            FeatureSet::BuiltInAnd(dir.path().to_path_buf()),
            FeatureSet::Only(dir.path().to_path_buf()),
        ] {
            let InvalidFeatures(problems) = load_checked(&set, &registered()).unwrap_err();
            let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
            assert_eq!(
                shown,
                [format!(
                    "{}:3: @behaviour:FT-EXIT-TERMINL of scenario \"s\" names no behaviour of spec/behaviours.yaml; did you mean @behaviour:FT-EXIT-TERMINAL?",
                    dir.path().join("mine.feature").display()
                )]
            );
        }
    }

    #[test]
    fn the_suite_registers_its_steps() {
        let definitions = registered();
        assert!(definitions.len() > 50, "{}", definitions.len());
        let reaches = definitions
            .iter()
            .find(|d| {
                d.phrases
                    .iter()
                    .any(|p| p.starts_with("it reaches phase … within"))
            })
            .expect("the `reaches phase` step");
        assert!(reaches.matches(StepType::Then, "it reaches phase Running within 30 seconds"));
        assert!(!reaches.matches(StepType::When, "it reaches phase Running within 30 seconds"));
        assert!(
            reaches.location.starts_with("steps/src/steps/") && reaches.location.contains(".rs:"),
            "{}",
            reaches.location
        );
    }

    #[test]
    fn a_step_is_found_from_its_text_whatever_its_keyword() {
        let definitions = registered();
        let found = matching(
            "  And it reaches phase Running within 30 seconds",
            &definitions,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].keyword, StepType::Then);
        let found = matching("the controller is killed", &definitions);
        assert_eq!(
            found.iter().map(|d| d.keyword).collect::<Vec<_>>(),
            [StepType::Given, StepType::When]
        );
        assert!(matching("the moon is made of cheese", &definitions).is_empty());
    }

    #[test]
    fn words_find_every_step_that_says_them() {
        let definitions = registered();
        let stays = containing("Stays", &definitions);
        assert_eq!(stays.len(), 2, "{stays:?}");
        let matches = containing("matches", &definitions);
        assert!(matches.len() >= 3, "{matches:?}");
        assert!(
            matches
                .iter()
                .all(|d| d.phrases.iter().any(|p| p.contains("matches")))
        );
        assert!(containing("cheese", &definitions).is_empty());
    }

    /// The step files, compiled into the test (nothing reads a source tree when it runs).
    const STEP_FILES: &[(&str, &str)] = &[
        ("admission.rs", include_str!("admission.rs")),
        ("appwrapper.rs", include_str!("appwrapper.rs")),
        ("assertions.rs", include_str!("assertions.rs")),
        (
            "controller_restarts.rs",
            include_str!("controller_restarts.rs"),
        ),
        (
            "controller_upgrade.rs",
            include_str!("controller_upgrade.rs"),
        ),
        ("custom_kinds.rs", include_str!("custom_kinds.rs")),
        ("kueue.rs", include_str!("kueue.rs")),
        ("monitor.rs", include_str!("monitor.rs")),
        ("nodes.rs", include_str!("nodes.rs")),
        ("objects.rs", include_str!("objects.rs")),
        ("pods.rs", include_str!("pods.rs")),
        ("timing_windows.rs", include_str!("timing_windows.rs")),
        ("unowned_objects.rs", include_str!("unowned_objects.rs")),
        ("kueue_upgrade.rs", include_str!("kueue_upgrade.rs")),
    ];

    /// Every location names the line of a step file where a step attribute begins.
    #[test]
    fn every_location_names_the_line_of_its_step_attribute() {
        for definition in registered() {
            let (path, line) = definition.location.rsplit_once(':').unwrap();
            let file = path.strip_prefix("steps/src/steps/").unwrap_or(path);
            let (_, text) = STEP_FILES
                .iter()
                .find(|(name, _)| *name == file)
                .unwrap_or_else(|| panic!("{} is not a step file", definition.location));
            let line: usize = line.parse().unwrap();
            let at = text.lines().nth(line - 1).unwrap_or_default();
            assert!(
                ["#[given", "#[when", "#[then"]
                    .iter()
                    .any(|a| at.trim_start().starts_with(a)),
                "{}: {at:?}",
                definition.location
            );
        }
    }
}
