//! A scenario's Gherkin text as the report shows it: its steps (the backgrounds' first), each
//! with its docstring or table, and where it is written.

use cucumber::gherkin::{Feature, Rule, Scenario, Step};

/// Where a scenario is written: its feature file (the feature's name when it has no file) and
/// the line of the scenario (of its example row, for an outline's expansion).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScenarioKey {
    pub file: String,
    pub line: usize,
}

impl ScenarioKey {
    pub fn of(feature: &Feature, scenario: &Scenario) -> ScenarioKey {
        ScenarioKey {
            file: feature
                .path
                .as_ref()
                .map_or_else(|| feature.name.clone(), |p| p.display().to_string()),
            line: scenario.position.line,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepText {
    pub keyword: String,
    pub text: String,
    pub docstring: Option<String>,
    pub table: Vec<Vec<String>>,
    pub line: usize,
    /// Part of a Background.
    pub background: bool,
}

impl StepText {
    fn of(step: &Step, background: bool) -> StepText {
        StepText {
            keyword: step.keyword.trim().to_string(),
            text: step.value.clone(),
            docstring: step.docstring.clone(),
            table: step
                .table
                .as_ref()
                .map(|t| t.rows.clone())
                .unwrap_or_default(),
            line: step.position.line,
            background,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScenarioText {
    pub key: ScenarioKey,
    pub keyword: String,
    pub name: String,
    pub description: Option<String>,
    /// The feature's, the rule's and the scenario's.
    pub tags: Vec<String>,
    pub steps: Vec<StepText>,
}

impl ScenarioText {
    pub fn of(feature: &Feature, rule: Option<&Rule>, scenario: &Scenario) -> ScenarioText {
        let backgrounds = feature
            .background
            .iter()
            .chain(rule.and_then(|r| r.background.as_ref()));
        let steps = backgrounds
            .flat_map(|b| b.steps.iter().map(|s| StepText::of(s, true)))
            .chain(scenario.steps.iter().map(|s| StepText::of(s, false)))
            .collect();
        ScenarioText {
            key: ScenarioKey::of(feature, scenario),
            keyword: scenario.keyword.clone(),
            name: scenario.name.clone(),
            description: scenario
                .description
                .clone()
                .filter(|d| !d.trim().is_empty()),
            tags: feature
                .tags
                .iter()
                .chain(rule.iter().flat_map(|r| r.tags.iter()))
                .chain(scenario.tags.iter())
                .cloned()
                .collect(),
            steps,
        }
    }

    /// Its name, steps, docstrings and table cells, one a line: where the report looks for
    /// the parameters a scenario tests.
    pub fn searchable(&self) -> String {
        let mut lines = vec![self.name.clone()];
        for step in &self.steps {
            lines.push(step.text.clone());
            lines.extend(step.docstring.clone());
            lines.extend(step.table.iter().map(|row| row.join(" | ")));
        }
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEATURE: &str = r#"
Feature: Phases
  Background:
    Given the suite's queues

  Rule: deletion
    Background:
      Given a rule step

    @slow
    Scenario: Gone
      Given an AppWrapper "a" with the annotations:
        | retryLimit | 1 |
      Then it matches:
        """
        status: {}
        """
"#;

    #[test]
    fn backgrounds_come_first_and_everything_is_searchable() {
        let feature = Feature::parse(FEATURE, Default::default()).unwrap();
        let rule = &feature.rules[0];
        let text = ScenarioText::of(&feature, Some(rule), &rule.scenarios[0]);
        let steps: Vec<(&str, &str, bool)> = text
            .steps
            .iter()
            .map(|s| (s.keyword.as_str(), s.text.as_str(), s.background))
            .collect();
        assert_eq!(
            steps,
            vec![
                ("Given", "the suite's queues", true),
                ("Given", "a rule step", true),
                ("Given", "an AppWrapper \"a\" with the annotations:", false),
                ("Then", "it matches:", false),
            ]
        );
        assert_eq!(text.tags, vec!["slow".to_string()]);
        assert_eq!(text.key.file, "Phases");
        assert_eq!(text.key.line, 11);
        let searchable = text.searchable();
        assert!(searchable.contains("retryLimit | 1"));
        assert!(searchable.contains("status: {}"));
    }
}
