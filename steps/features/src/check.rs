//! Every step of the features against the step definitions, before a run: a step that no
//! definition matches, or more than one, is a problem at its file and line; an unknown one
//! comes with the closest known steps.

use std::path::Path;

use cucumber::gherkin::{Feature, Step};

use super::definitions::{StepDefinition, closest, keyword_name};
use super::problem::Problem;

pub fn check(features: &[Feature], definitions: &[StepDefinition]) -> Vec<Problem> {
    let mut problems = Vec::new();
    for feature in features {
        let path = crate::files::file_of(feature);
        for (line, tag) in tags_of(feature) {
            if let Some(Err(e)) = crate::version_tags::parse(tag) {
                problems.push(Problem::at(&path, line, e));
            }
        }
        for step in steps_of(feature) {
            let matching: Vec<&StepDefinition> = definitions
                .iter()
                .filter(|d| d.matches(step.ty, &step.value))
                .collect();
            match matching.len() {
                1 => {}
                0 => problems.push(unknown(&path, step, definitions)),
                _ => problems.push(ambiguous(&path, step, &matching)),
            }
        }
    }
    problems.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    // A Scenario Outline's steps appear once per example.
    problems.dedup();
    problems
}

/// The tags of the feature, its rules and its scenarios, with the line of what they tag.
fn tags_of(feature: &Feature) -> impl Iterator<Item = (usize, &String)> {
    fn tagged(line: usize, tags: &[String]) -> impl Iterator<Item = (usize, &String)> {
        tags.iter().map(move |t| (line, t))
    }
    let rules = feature.rules.iter().flat_map(move |r| {
        tagged(r.position.line, &r.tags).chain(
            r.scenarios
                .iter()
                .flat_map(move |s| tagged(s.position.line, &s.tags)),
        )
    });
    tagged(feature.position.line, &feature.tags)
        .chain(
            feature
                .scenarios
                .iter()
                .flat_map(move |s| tagged(s.position.line, &s.tags)),
        )
        .chain(rules)
}

/// Backgrounds' and scenarios' steps, rules' included.
fn steps_of(feature: &Feature) -> impl Iterator<Item = &Step> {
    let backgrounds = feature
        .background
        .iter()
        .chain(feature.rules.iter().flat_map(|r| r.background.iter()))
        .flat_map(|b| b.steps.iter());
    let scenarios = feature
        .scenarios
        .iter()
        .chain(feature.rules.iter().flat_map(|r| r.scenarios.iter()))
        .flat_map(|s| s.steps.iter());
    backgrounds.chain(scenarios)
}

fn written(step: &Step) -> String {
    let keyword = step.keyword.trim();
    let kind = keyword_name(step.ty);
    if keyword == kind {
        format!("{keyword} {}", step.value)
    } else {
        format!("{keyword} {} (a {kind} step)", step.value)
    }
}

fn unknown(path: &Path, step: &Step, definitions: &[StepDefinition]) -> Problem {
    let mut message = format!("unknown step: {}", written(step));
    if let Some(other) = definitions.iter().find(|d| d.regex.is_match(&step.value)) {
        message.push_str(&format!(
            "; only a {} step reads so",
            keyword_name(other.keyword)
        ));
    }
    let suggestions = closest(step.ty, &step.value, definitions);
    if !suggestions.is_empty() {
        message.push_str("\n    closest known steps:");
        for suggestion in suggestions {
            message.push_str(&format!("\n      {suggestion}"));
        }
    }
    Problem::at(path, step.position.line, message)
}

fn ambiguous(path: &Path, step: &Step, matching: &[&StepDefinition]) -> Problem {
    let mut message = format!(
        "ambiguous step: {} matches {} step definitions:",
        written(step),
        matching.len()
    );
    for definition in matching {
        message.push_str(&format!("\n      {}", definition.regex.as_str()));
    }
    Problem::at(path, step.position.line, message)
}

#[cfg(test)]
mod tests {
    use cucumber::gherkin::StepType;

    use super::*;
    use crate::load::parse_text;

    fn definitions() -> Vec<StepDefinition> {
        [
            (
                StepType::Given,
                r#"^an AppWrapper "([^"]+)" wrapping (.+)$"#,
            ),
            (
                StepType::When,
                r#"^(it|the AppWrapper(?: "[^"]+")?) is submitted to the LocalQueue$"#,
            ),
            (
                StepType::Then,
                r#"^(it|the AppWrapper(?: "[^"]+")?) reaches phase (\w+) within (\d+ seconds?)$"#,
            ),
            (
                StepType::Then,
                r#"^(it|the AppWrapper(?: "[^"]+")?) is in phase (\w+)$"#,
            ),
            (
                StepType::Then,
                r#"^(it|the AppWrapper(?: "[^"]+")?) is (.+)$"#,
            ),
        ]
        .into_iter()
        .map(|(keyword, regex)| StepDefinition::new(keyword, regex).unwrap())
        .collect()
    }

    fn problems_of(steps: &str) -> Vec<Problem> {
        let text = format!("Feature: f\n  Scenario: s\n{steps}");
        let feature = parse_text(Path::new("mine.feature"), &text).unwrap();
        check(&[feature], &definitions())
    }

    /// The problems a text should have: (line, texts its message holds) each.
    type Expected<'a> = &'a [(usize, &'a [&'a str])];

    #[test]
    fn known_steps_pass_and_others_are_named_with_their_line() {
        let table: &[(&str, Expected)] = &[
            (
                "    Given an AppWrapper \"a\" wrapping a Pod\n    When it is submitted to the LocalQueue\n    Then it reaches phase Running within 30 seconds\n",
                &[],
            ),
            (
                "    Given an AppWrapper \"a\" wrapping a Pod\n    Then it reaches phaze Running within 30 seconds\n",
                &[(
                    4,
                    &[
                        "unknown step: Then it reaches phaze Running within 30 seconds",
                        "closest known steps:\n      Then it reaches phase … within N seconds",
                    ],
                )],
            ),
            (
                "    Given an AppWrapper \"a\" wrapping a Pod\n    And it is submitted to the LocalQueue\n",
                &[(
                    4,
                    &[
                        "unknown step: And it is submitted to the LocalQueue (a Given step)",
                        "only a When step reads so",
                        "When it is submitted to the LocalQueue",
                    ],
                )],
            ),
            (
                "    Then it is in phase Running\n",
                &[(
                    3,
                    &["ambiguous step: Then it is in phase Running matches 2 step definitions"],
                )],
            ),
        ];
        for (steps, want) in table {
            let problems = problems_of(steps);
            assert_eq!(problems.len(), want.len(), "{steps}: {problems:#?}");
            for (problem, (line, texts)) in problems.iter().zip(want.iter()) {
                assert_eq!(problem.file, Path::new("mine.feature"));
                assert_eq!(problem.line, *line, "{problem}");
                for text in *texts {
                    assert!(problem.message.contains(text), "{problem}\nlacks {text}");
                }
            }
        }
    }

    #[test]
    fn a_version_tag_that_names_no_version_is_a_problem_at_its_line() {
        let text = "@kueue>=0.18\nFeature: f\n  @serial @kubernetes>=one\n  Scenario: s\n    Then it is in phase Running\n\n  Rule: r\n    @kueue>=0.17,<0.19\n    Scenario: t\n      Then it is in phase Running\n";
        let feature = parse_text(Path::new("v.feature"), text).unwrap();
        let problems: Vec<Problem> = check(&[feature], &definitions())
            .into_iter()
            .filter(|p| p.message.contains("version tag"))
            .collect();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].line, 4);
        assert!(problems[0].message.starts_with("@kubernetes>=one: "));
    }

    #[test]
    fn each_example_of_an_outline_is_checked_once() {
        let text = "Feature: f\n  Scenario Outline: s <n>\n    Then it sparkles\n    And it sparkles <n> times\n    Examples:\n      | n |\n      | 1 |\n      | 2 |\n";
        let feature = parse_text(Path::new("o.feature"), text).unwrap();
        let lines: Vec<usize> = check(&[feature], &definitions())
            .iter()
            .map(|p| p.line)
            .collect();
        assert_eq!(lines, [3, 4, 4]);
    }

    #[test]
    fn the_closest_steps_come_first() {
        let got = closest(
            StepType::Then,
            "the AppWrapper \"x\" reached phase Failed within 5 seconds",
            &definitions(),
        );
        assert_eq!(
            got[0],
            "Then the AppWrapper \"…\" reaches phase … within N seconds"
        );
        assert_eq!(got.len(), crate::definitions::SUGGESTIONS);
    }
}
