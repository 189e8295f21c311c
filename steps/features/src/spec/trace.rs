//! Which scenarios check which behaviours: a scenario names each behaviour it checks with a
//! tag `@behaviour:ID`, on itself, its Rule, its Feature or (for an outline) its Examples.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cucumber::gherkin::{Feature, Rule, Scenario};

/// What a behaviour tag starts with (a gherkin tag comes without its `@`).
pub const TAG_PREFIX: &str = "behaviour:";

/// A scenario as a reader finds it: an outline's examples each count, at their row.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScenarioAt {
    pub file: PathBuf,
    pub line: usize,
    pub name: String,
}

impl std::fmt::Display for ScenarioAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}  {}", self.file.display(), self.line, self.name)
    }
}

/// The behaviour ids the tags name, in their order.
pub fn behaviour_ids<'a>(tags: impl IntoIterator<Item = &'a String>) -> Vec<&'a str> {
    tags.into_iter()
        .filter_map(|t| t.strip_prefix(TAG_PREFIX))
        .collect()
}

/// The behaviour ids a scenario names, with its feature's and rule's.
pub fn named_by<'a>(
    feature: &'a Feature,
    rule: Option<&'a Rule>,
    scenario: &'a Scenario,
) -> Vec<&'a str> {
    let mut ids = behaviour_ids(
        feature
            .tags
            .iter()
            .chain(rule.iter().flat_map(|r| r.tags.iter()))
            .chain(scenario.tags.iter()),
    );
    ids.dedup();
    ids
}

/// Every scenario of the features with the behaviour ids it names.
pub fn scenarios(features: &[Feature]) -> Vec<(ScenarioAt, Vec<&str>)> {
    let mut found = Vec::new();
    for feature in features {
        let file = crate::files::file_of(feature);
        for (rule, scenario) in crate::load::scenarios_of(feature) {
            let at = ScenarioAt {
                file: file.clone(),
                line: scenario.position.line,
                name: scenario.name.clone(),
            };
            found.push((at, named_by(feature, rule, scenario)));
        }
    }
    found
}

/// For each behaviour id that some scenario names, those scenarios in file and line order.
pub fn by_behaviour(features: &[Feature]) -> BTreeMap<String, Vec<ScenarioAt>> {
    let mut index: BTreeMap<String, Vec<ScenarioAt>> = BTreeMap::new();
    for (at, ids) in scenarios(features) {
        for id in ids {
            index.entry(id.to_string()).or_default().push(at.clone());
        }
    }
    for list in index.values_mut() {
        list.sort();
        list.dedup();
    }
    index
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::load::parse_text;

    #[test]
    fn tags_of_the_feature_rule_scenario_and_examples_name_behaviours() {
        let text = "@behaviour:A-ALL @serial\nFeature: f\n  @behaviour:A-ONE\n  Scenario: one\n    Given a\n  Rule: r\n    @behaviour:A-RULE\n    Scenario Outline: two <n>\n      Given a\n      @behaviour:A-EX\n      Examples:\n        | n |\n        | 1 |\n";
        let feature = parse_text(Path::new("f.feature"), text).unwrap();
        let index = by_behaviour(&[feature]);
        let names = |id: &str| -> Vec<(usize, String)> {
            index[id].iter().map(|s| (s.line, s.name.clone())).collect()
        };
        assert_eq!(
            names("A-ALL"),
            [(4, "one".to_string()), (13, "two 1".to_string())]
        );
        assert_eq!(names("A-ONE"), [(4, "one".to_string())]);
        assert_eq!(names("A-RULE"), [(13, "two 1".to_string())]);
        assert_eq!(names("A-EX"), [(13, "two 1".to_string())]);
        assert!(!index.contains_key("serial"));
    }
}
