//! The features against the specification: a scenario may name only behaviours the
//! specification has, and (for the built-in features) every behaviour is checked by a
//! scenario or says why none does, and none says so while a scenario checks it.

use std::collections::BTreeMap;

use cucumber::gherkin::Feature;

use super::problem::Problem;
use crate::spec::{self, ScenarioAt, Specification, TAG_PREFIX};

/// A problem for every tag naming a behaviour the specification does not have.
pub fn unknown(features: &[Feature], spec: &Specification) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (at, ids) in spec::scenarios(features) {
        for id in ids.into_iter().filter(|id| spec.find(id).is_none()) {
            let mut message = format!(
                "@{TAG_PREFIX}{id} of scenario \"{}\" names no behaviour of {}",
                at.name,
                spec::PATH
            );
            if let Some(near) = spec.closest(id) {
                message.push_str(&format!("; did you mean @{TAG_PREFIX}{near}?"));
            }
            problems.push(Problem::at(&at.file, at.line, message));
        }
    }
    problems
}

/// A problem for every behaviour that no scenario checks and that gives no reason, and for
/// every one that gives a reason although a scenario checks it; at its line of the
/// specification.
pub fn coverage(checked: &BTreeMap<String, Vec<ScenarioAt>>, spec: &Specification) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (_, b) in spec.behaviours() {
        match (checked.get(&b.id), &b.unchecked) {
            (None, None) => problems.push(Problem::at(
                spec::PATH,
                b.line,
                format!(
                    "behaviour {} is checked by no scenario: tag one with @{TAG_PREFIX}{}, or say why none can with `unchecked:`",
                    b.id, b.id
                ),
            )),
            (Some(scenarios), Some(_)) => problems.push(Problem::at(
                spec::PATH,
                b.line,
                format!(
                    "behaviour {} says it is unchecked, but {} checks it",
                    b.id, scenarios[0]
                ),
            )),
            _ => {}
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rstest::rstest;

    use super::*;
    use crate::load::parse_text;

    fn spec() -> Specification {
        Specification::parse(
            "areas:\n  - id: a\n    title: A\n    behaviours:\n      - id: FT-EXIT-TERMINAL\n        statement: It MUST fail.\n      - id: FT-QUIET\n        statement: It MAY rest.\n        unchecked: not observable\n",
        )
        .unwrap()
    }

    fn feature(tags: &str) -> Feature {
        let text = format!("Feature: f\n\n  {tags}\n  Scenario: s\n    Given a step\n");
        parse_text(Path::new("mine.feature"), &text).unwrap()
    }

    #[rstest]
    #[case::known("@behaviour:FT-EXIT-TERMINAL @serial", &[])]
    #[case::misspelt(
        "@behaviour:FT-EXIT-TERMINL",
        &["mine.feature:4: @behaviour:FT-EXIT-TERMINL of scenario \"s\" names no behaviour of spec/behaviours.yaml; did you mean @behaviour:FT-EXIT-TERMINAL?"]
    )]
    #[case::unknown(
        "@behaviour:XYZ-NOTHING-LIKE-IT",
        &["mine.feature:4: @behaviour:XYZ-NOTHING-LIKE-IT of scenario \"s\" names no behaviour of spec/behaviours.yaml"]
    )]
    fn a_scenario_may_name_only_known_behaviours(#[case] tags: &str, #[case] want: &[&str]) {
        let shown: Vec<String> = unknown(&[feature(tags)], &spec())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, want);
    }

    #[rstest]
    #[case::checked_and_reasoned("@behaviour:FT-EXIT-TERMINAL", &[])]
    #[case::unchecked_without_reason(
        "@serial",
        &["spec/behaviours.yaml:5: behaviour FT-EXIT-TERMINAL is checked by no scenario: tag one with @behaviour:FT-EXIT-TERMINAL, or say why none can with `unchecked:`"]
    )]
    #[case::checked_despite_reason(
        "@behaviour:FT-EXIT-TERMINAL @behaviour:FT-QUIET",
        &["spec/behaviours.yaml:7: behaviour FT-QUIET says it is unchecked, but mine.feature:4  s checks it"]
    )]
    fn every_behaviour_is_checked_or_says_why_not(#[case] tags: &str, #[case] want: &[&str]) {
        let checked = spec::by_behaviour(&[feature(tags)]);
        let shown: Vec<String> = coverage(&checked, &spec())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, want);
    }
}
