//! The step definitions a feature's steps must match: those `#[given]`, `#[when]` and
//! `#[then]` register for [`AwWorld`] (see [`crate::steps`]).

use cucumber::codegen::{StepConstructor as _, WorldInventory, inventory};
use cucumber::gherkin::StepType;
use cucumber::step::Location;
use regex::Regex;

use super::nearest;
use crate::world::AwWorld;

/// One step definition: its keyword, its regex, the phrases the regex reads as, and where
/// its function is (`steps/src/steps/assertions.rs:216`).
#[derive(Clone, Debug)]
pub struct StepDefinition {
    pub keyword: StepType,
    pub regex: Regex,
    pub phrases: Vec<String>,
    pub location: String,
}

impl StepDefinition {
    pub fn new(keyword: StepType, regex: &str) -> Result<Self, regex::Error> {
        Ok(StepDefinition {
            keyword,
            regex: Regex::new(regex)?,
            phrases: nearest::phrases(regex),
            location: String::new(),
        })
    }

    /// As cucumber matches: the regex found in the step's text, for the step's keyword
    /// (`And` and `But` take the keyword before them).
    pub fn matches(&self, keyword: StepType, text: &str) -> bool {
        self.keyword == keyword && self.regex.is_match(text)
    }
}

/// The suite's step definitions, by keyword and regex.
pub fn registered() -> Vec<StepDefinition> {
    let mut definitions = Vec::new();
    let mut add = |keyword, (location, regex, _): (Location, fn() -> Regex, _)| {
        let regex = regex();
        definitions.push(StepDefinition {
            keyword,
            phrases: nearest::phrases(regex.as_str()),
            regex,
            location: format!("{}:{}", location.path, location.line),
        });
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

/// The definitions a step's text matches, whatever its keyword; a leading `Given`, `When`,
/// `Then`, `And`, `But` or `*` is ignored.
pub fn matching<'a>(text: &str, definitions: &'a [StepDefinition]) -> Vec<&'a StepDefinition> {
    let (_, text) = split_keyword(text);
    definitions
        .iter()
        .filter(|d| d.regex.is_match(text))
        .collect()
}

/// The definitions one of whose phrases contains `words` (any case): `stays` finds every
/// step that says it.
pub fn containing<'a>(words: &str, definitions: &'a [StepDefinition]) -> Vec<&'a StepDefinition> {
    let words = words.trim().to_lowercase();
    definitions
        .iter()
        .filter(|d| d.phrases.iter().any(|p| p.to_lowercase().contains(&words)))
        .collect()
}

/// The definitions closest to a step's text that matches none (as `awconf features check`
/// suggests them), for its keyword when it has one.
pub fn suggestions(text: &str, definitions: &[StepDefinition]) -> Vec<String> {
    let (keyword, text) = split_keyword(text);
    super::closest(keyword.unwrap_or(StepType::Then), text, definitions)
}

/// A step's keyword, if written (`And`, `But` and `*` name none), and the rest of its text.
fn split_keyword(text: &str) -> (Option<StepType>, &str) {
    let text = text.trim();
    let keywords = [
        ("Given ", Some(StepType::Given)),
        ("When ", Some(StepType::When)),
        ("Then ", Some(StepType::Then)),
        ("And ", None),
        ("But ", None),
        ("* ", None),
    ];
    keywords
        .iter()
        .find_map(|(word, keyword)| Some((*keyword, text.strip_prefix(word)?.trim_start())))
        .unwrap_or((None, text))
}

pub fn keyword_name(keyword: StepType) -> &'static str {
    match keyword {
        StepType::Given => "Given",
        StepType::When => "When",
        StepType::Then => "Then",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(stays.len(), 1, "{stays:?}");
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
        ("admission.rs", include_str!("../steps/admission.rs")),
        ("appwrapper.rs", include_str!("../steps/appwrapper.rs")),
        ("assertions.rs", include_str!("../steps/assertions.rs")),
        (
            "controller_restarts.rs",
            include_str!("../steps/controller_restarts.rs"),
        ),
        (
            "controller_upgrade.rs",
            include_str!("../steps/controller_upgrade.rs"),
        ),
        ("custom_kinds.rs", include_str!("../steps/custom_kinds.rs")),
        ("kueue.rs", include_str!("../steps/kueue.rs")),
        ("monitor.rs", include_str!("../steps/monitor.rs")),
        ("nodes.rs", include_str!("../steps/nodes.rs")),
        ("objects.rs", include_str!("../steps/objects.rs")),
        ("pods.rs", include_str!("../steps/pods.rs")),
        (
            "timing_windows.rs",
            include_str!("../steps/timing_windows.rs"),
        ),
        (
            "unowned_objects.rs",
            include_str!("../steps/unowned_objects.rs"),
        ),
        (
            "kueue_upgrade.rs",
            include_str!("../steps/kueue_upgrade.rs"),
        ),
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
