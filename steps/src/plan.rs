//! What a run will run, settled before anything starts: the features, parsed and checked
//! against the step definitions, and the scenarios the tags and name filters select.

use cucumber::gherkin::tagexpr::TagOperation;
use cucumber::gherkin::{Feature, Rule, Scenario};
use cucumber::tag::Ext as _;

use crate::options::SuiteOptions;

/// The features of a run and its selection of scenarios.
pub struct Plan {
    pub features: Vec<Feature>,
    pub selection: Selection,
}

impl Plan {
    /// Parses the tag expression and loads the features of `options`, checking every step.
    /// An error here ([`crate::features::InvalidFeatures`] for the features) means that
    /// nothing may start.
    pub fn prepare(options: &SuiteOptions) -> anyhow::Result<Plan> {
        let selection = Selection::new(options.tags.as_deref(), &options.filters)
            .map_err(anyhow::Error::msg)?;
        let features = crate::features::load_checked(&options.features)?;
        Ok(Plan {
            features,
            selection,
        })
    }

    /// The titles (`feature: scenario`) of the scenarios the selection picks.
    pub fn selected(&self) -> Vec<String> {
        let mut titles = Vec::new();
        for feature in &self.features {
            let scenarios = feature.scenarios.iter().map(|s| (None, s)).chain(
                feature
                    .rules
                    .iter()
                    .flat_map(|r| r.scenarios.iter().map(move |s| (Some(r), s))),
            );
            for (rule, scenario) in scenarios {
                if self.selection.selects(feature, rule, scenario) {
                    titles.push(format!("{}: {}", feature.name, scenario.name));
                }
            }
        }
        titles
    }
}

/// Which scenarios run: those whose tags satisfy the tag expression and whose
/// `feature: scenario` title contains one of the name filters (each when given).
#[derive(Clone, Debug, Default)]
pub struct Selection {
    tags: Option<(String, TagOperation)>,
    filters: Vec<String>,
}

impl Selection {
    pub fn new(tags: Option<&str>, filters: &[String]) -> Result<Self, String> {
        let tags = match tags {
            Some(expr) => Some((
                expr.to_string(),
                expr.parse::<TagOperation>()
                    .map_err(|e| format!("tag expression {expr:?}: {e}"))?,
            )),
            None => None,
        };
        Ok(Selection {
            tags,
            filters: filters.to_vec(),
        })
    }

    pub fn selects(&self, feature: &Feature, rule: Option<&Rule>, scenario: &Scenario) -> bool {
        let tags = feature
            .tags
            .iter()
            .chain(rule.iter().flat_map(|r| r.tags.iter()))
            .chain(scenario.tags.iter());
        self.tags.as_ref().is_none_or(|(_, op)| op.eval(tags))
            && self.selects_title(&feature.name, &scenario.name)
    }

    fn selects_title(&self, feature: &str, scenario: &str) -> bool {
        let title = format!("{feature}: {scenario}");
        self.filters.is_empty() || self.filters.iter().any(|f| title.contains(f.as_str()))
    }

    /// What selected nothing, for the message that says so.
    pub fn describe(&self) -> String {
        let filters = (!self.filters.is_empty()).then(|| {
            let quoted: Vec<String> = self.filters.iter().map(|f| format!("{f:?}")).collect();
            format!(
                "the name filter{} {}",
                plural(quoted.len()),
                quoted.join(", ")
            )
        });
        let tags = self
            .tags
            .as_ref()
            .map(|(expr, _)| format!("the tags {expr:?}"));
        match (tags, filters) {
            (Some(tags), Some(filters)) => format!("{tags} and {filters}"),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => "the features".to_string(),
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Hands cucumber the features [`Plan::prepare`] has parsed, instead of reading files.
pub struct Prepared;

impl cucumber::Parser<Vec<Feature>> for Prepared {
    type Cli = cucumber::cli::Empty;
    type Output = futures::stream::Iter<std::vec::IntoIter<cucumber::parser::Result<Feature>>>;

    fn parse(self, features: Vec<Feature>, _: Self::Cli) -> Self::Output {
        futures::stream::iter(features.into_iter().map(Ok).collect::<Vec<_>>())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::features::parse_text;

    fn plan(tags: Option<&str>, filters: &[&str]) -> Plan {
        let text = "Feature: Phases\n  Scenario: Running → Succeeded: every pod succeeded\n    Given a\n  @serial\n  Scenario: Running → Failed\n    Given a\n  Rule: r\n    @kueue\n    Scenario: Restart safety\n      Given a\n";
        let filters: Vec<String> = filters.iter().map(|f| f.to_string()).collect();
        Plan {
            features: vec![parse_text(Path::new("p.feature"), text).unwrap()],
            selection: Selection::new(tags, &filters).unwrap(),
        }
    }

    #[test]
    fn tags_and_name_filters_select_scenarios() {
        let table: &[(Option<&str>, &[&str], usize)] = &[
            (None, &[], 3),
            (None, &["Running → Succeeded"], 1),
            (None, &["Running →", "Restart"], 3),
            (Some("@serial"), &[], 1),
            (Some("not @serial"), &["Running"], 1),
            (Some("@kueue"), &[], 1),
            (None, &["unit_test_name"], 0),
        ];
        for (tags, filters, want) in table {
            assert_eq!(
                plan(*tags, filters).selected().len(),
                *want,
                "{tags:?} {filters:?}"
            );
        }
    }

    #[test]
    fn an_empty_selection_says_what_selected_nothing() {
        let table: &[(Option<&str>, &[&str], &str)] = &[
            (None, &["x"], r#"the name filter "x""#),
            (None, &["x", "y"], r#"the name filters "x", "y""#),
            (
                Some("@a"),
                &["x"],
                r#"the tags "@a" and the name filter "x""#,
            ),
        ];
        for (tags, filters, want) in table {
            assert_eq!(plan(*tags, filters).selection.describe(), *want);
        }
        assert!(Selection::new(Some("@a and"), &[]).is_err());
    }
}
