//! What a run will run, settled before anything starts: the features, parsed and checked
//! against the step definitions, and the scenarios the tags and name filters select.

use cucumber::gherkin::tagexpr::TagOperation;
use cucumber::gherkin::{Feature, Rule, Scenario};
use cucumber::tag::Ext as _;
use std::collections::HashMap;
use std::path::Path;

use crate::features::scenarios_of;
use crate::options::{ControllerMode, SuiteOptions};

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
        let features = crate::features::load_checked(
            &options.features,
            &crate::steps::registry::registered(),
        )?;
        Ok(Plan {
            features,
            selection,
        })
    }

    /// The titles (`feature: scenario`) of the scenarios the selection picks.
    pub fn selected(&self) -> Vec<String> {
        self.selected_scenarios()
            .map(|(feature, _, scenario)| format!("{}: {}", feature.name, scenario.name))
            .collect()
    }

    /// How many scenarios the tags and name filters leave out.
    pub fn not_selected(&self) -> usize {
        self.features
            .iter()
            .flat_map(|feature| {
                scenarios_of(feature).filter(move |(rule, scenario)| {
                    !self.selection.selects(feature, *rule, scenario)
                })
            })
            .count()
    }

    /// Whether a scenario the selection picks carries `tag` (itself, or its rule or feature).
    pub fn selects_tagged(&self, tag: &str) -> bool {
        self.tagged(tag) > 0
    }

    /// How many scenarios the selection picks carry `tag`.
    pub fn tagged(&self, tag: &str) -> usize {
        self.selected_scenarios()
            .filter(|(feature, rule, scenario)| has_tag(feature, *rule, scenario, tag))
            .count()
    }

    fn selected_scenarios(&self) -> impl Iterator<Item = (&Feature, Option<&Rule>, &Scenario)> {
        self.features.iter().flat_map(move |feature| {
            scenarios_of(feature)
                .filter(move |(rule, scenario)| self.selection.selects(feature, *rule, scenario))
                .map(move |(rule, scenario)| (feature, rule, scenario))
        })
    }
}

fn has_tag(feature: &Feature, rule: Option<&Rule>, scenario: &Scenario, tag: &str) -> bool {
    feature
        .tags
        .iter()
        .chain(rule.iter().flat_map(|r| r.tags.iter()))
        .chain(scenario.tags.iter())
        .any(|t| t == tag)
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

/// The `s` of a plural noun after `n`.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Hands cucumber the features [`Plan::prepare`] has parsed, instead of reading files, in the
/// order they should start: the `@kueue-upgrade` scenario first, longest first.
pub struct Prepared {
    /// The upgrade scenario upgrades the run's Kueue, and runs alone before any other.
    pub upgrade_alone: bool,
    /// Seconds each scenario is expected to take, by `feature: scenario` ([`expected`]).
    /// Scenarios start longest first, those not known first of all.
    pub expected: HashMap<String, f64>,
}

/// Seconds each scenario is expected to take, by `feature: scenario`: as it took in the run
/// whose results are in `report_dir`, and as shipped for `mode`'s controller for scenarios
/// that run did not take ([`crate::expected_durations`]).
pub fn expected(report_dir: &Path, mode: &ControllerMode) -> HashMap<String, f64> {
    let mut expected = crate::expected_durations::shipped(mode);
    if let Ok(previous) = crate::report::results::RunResults::read(report_dir) {
        expected.extend(
            previous
                .scenarios
                .into_iter()
                .filter(|s| s.seconds > 0.0)
                .map(|s| (format!("{}: {}", s.feature, s.scenario), s.seconds)),
        );
    }
    expected
}

impl cucumber::Parser<Vec<Feature>> for Prepared {
    type Cli = cucumber::cli::Empty;
    type Output = futures::stream::Iter<std::vec::IntoIter<cucumber::parser::Result<Feature>>>;

    fn parse(self, features: Vec<Feature>, _: Self::Cli) -> Self::Output {
        let features = long_first(longest_first(features, &self.expected));
        let features = match self.upgrade_alone {
            true => upgrade_first(features),
            false => upgrade_in_front(features),
        };
        futures::stream::iter(features.into_iter().map(Ok).collect::<Vec<_>>())
    }
}

/// Orders the scenarios of each feature (and of each rule), and then the features by their
/// longest scenario, longest first as `expected` says; a scenario it does not know counts as
/// the longest. Stable: with nothing known, the order stays as written.
pub fn longest_first(mut features: Vec<Feature>, expected: &HashMap<String, f64>) -> Vec<Feature> {
    let key = |feature: &str, scenario: &Scenario| {
        expected
            .get(&format!("{feature}: {}", scenario.name))
            .copied()
            .unwrap_or(f64::INFINITY)
    };
    let mut longest = Vec::new();
    for feature in &mut features {
        let name = feature.name.clone();
        let by_length = |a: &Scenario, b: &Scenario| key(&name, b).total_cmp(&key(&name, a));
        feature.scenarios.sort_by(by_length);
        for rule in &mut feature.rules {
            rule.scenarios.sort_by(by_length);
        }
        let max = feature
            .scenarios
            .iter()
            .chain(feature.rules.iter().flat_map(|r| r.scenarios.iter()))
            .map(|s| key(&name, s))
            .fold(f64::NEG_INFINITY, f64::max);
        longest.push(max);
    }
    let mut paired: Vec<(f64, Feature)> = longest.into_iter().zip(features).collect();
    paired.sort_by(|a, b| b.0.total_cmp(&a.0));
    paired.into_iter().map(|(_, f)| f).collect()
}

/// Puts the features with `@own-controller` scenarios first (keeping the order otherwise): they
/// are the longest, each waits out a controller's period, and each needs a place for its own
/// controller or cluster, a few at a time; started first, they run beside the others instead
/// of after them. Those with fewer such scenarios go first: the places go to whoever asks
/// until they are full, and a feature with many would otherwise take them all and leave a
/// later feature's long scenario waiting for the second round.
pub fn long_first(features: Vec<Feature>) -> Vec<Feature> {
    let tag = crate::hooks::OWN_CONTROLLER_TAG;
    let own = |f: &Feature| {
        f.scenarios
            .iter()
            .filter(|s| has_tag(f, None, s, tag))
            .count()
    };
    let (mut ordered, mut rest): (Vec<Feature>, Vec<Feature>) =
        features.into_iter().partition(|f| own(f) > 0);
    ordered.sort_by_key(|f| own(f));
    ordered.append(&mut rest);
    ordered
}

/// Puts the `@kueue-upgrade` scenario first, when it runs beside the others on a cluster of
/// its own: it is the longest.
pub fn upgrade_in_front(features: Vec<Feature>) -> Vec<Feature> {
    let mut ordered = upgrade_first(features);
    let upgrades = ordered
        .iter()
        .filter(|f| {
            f.scenarios
                .first()
                .is_some_and(|s| has_tag(f, None, s, crate::options::KUEUE_UPGRADE_TAG))
        })
        .count();
    ordered.rotate_right(upgrades);
    ordered
}

/// Orders the features so that cucumber runs the `@kueue-upgrade` scenarios before any other:
/// the run starts Kueue at the release the upgrade starts from, and every other scenario must
/// meet the Kueue under test. cucumber (0.23) reads the whole stream before it starts a
/// scenario, always takes a `@serial` scenario before a concurrent one, and puts the
/// `@serial` scenarios of a later feature in front of those of an earlier one, keeping the
/// order within a feature. So the features with such a scenario go last, each with it as its
/// first scenario. `plan::tests` runs cucumber to hold it to that; the harness refuses to set
/// up any other scenario while the upgrade is still to come.
pub fn upgrade_first(features: Vec<Feature>) -> Vec<Feature> {
    let tag = crate::options::KUEUE_UPGRADE_TAG;
    let upgrades = |f: &Feature| f.scenarios.iter().any(|s| has_tag(f, None, s, tag));
    let (mut last, mut ordered): (Vec<Feature>, Vec<Feature>) =
        features.into_iter().partition(|f| upgrades(f));
    for feature in &mut last {
        let (mut first, rest): (Vec<Scenario>, Vec<Scenario>) =
            std::mem::take(&mut feature.scenarios)
                .into_iter()
                .partition(|s| has_tag(feature, None, s, tag));
        first.extend(rest);
        feature.scenarios = first;
    }
    ordered.append(&mut last);
    ordered
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::features::parse_text;

    #[test]
    fn features_with_own_controller_scenarios_come_first_those_with_fewer_before() {
        let feature = |name: &str, tags: &str, scenarios: usize| {
            let scenarios = "  Scenario: S\n    Given a\n".repeat(scenarios);
            let text = format!("{tags}\nFeature: {name}\n{scenarios}");
            parse_text(Path::new("f.feature"), &text).unwrap()
        };
        let names: Vec<String> = long_first(vec![
            feature("A", "", 1),
            feature("Many", "@own-controller", 3),
            feature("B", "@serial @own-controller", 1),
            feature("C", "", 1),
            feature("D", "@own-controller", 1),
        ])
        .into_iter()
        .map(|f| f.name)
        .collect();
        assert_eq!(names, ["B", "D", "Many", "A", "C"]);
    }

    #[test]
    fn an_upgrade_on_a_cluster_of_its_own_comes_first_and_the_rest_keep_their_order() {
        let feature = |name: &str, text: &str| {
            let text = format!("Feature: {name}\n{text}");
            parse_text(Path::new("f.feature"), &text).unwrap()
        };
        let scenario =
            |tags: &str, name: &str| format!("  {tags}\n  Scenario: {name}\n    Given a\n");
        let features = vec![
            feature("A", &scenario("", "a")),
            feature(
                "K",
                &(scenario("", "k1") + &scenario("@serial @kueue-upgrade", "upgrade")),
            ),
            feature("R", &scenario("@own-controller", "r")),
        ];
        let ordered = upgrade_in_front(long_first(features));
        let names: Vec<(&str, &str)> = ordered
            .iter()
            .flat_map(|f| {
                f.scenarios
                    .iter()
                    .map(move |s| (f.name.as_str(), s.name.as_str()))
            })
            .collect();
        assert_eq!(
            names,
            [("K", "upgrade"), ("K", "k1"), ("R", "r"), ("A", "a")]
        );
    }

    #[test]
    fn scenarios_start_longest_first_as_the_previous_run_took_and_unknown_ones_first() {
        let text = "Feature: F\n  Scenario: short\n    Given a\n  Scenario: long\n    Given a\n  Scenario: new\n    Given a\n  Rule: R\n    Scenario: r1\n      Given a\n    Scenario: r2\n      Given a\n";
        let f = parse_text(Path::new("f.feature"), text).unwrap();
        let g = parse_text(
            Path::new("g.feature"),
            "Feature: G\n  Scenario: g\n    Given a\n",
        )
        .unwrap();
        let expected: HashMap<String, f64> = [
            ("F: short", 5.0),
            ("F: long", 50.0),
            ("F: r1", 1.0),
            ("F: r2", 2.0),
            ("G: g", 80.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let known: HashMap<String, f64> = expected
            .iter()
            .filter(|(k, _)| k.starts_with('G'))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let names = |features: &[Feature]| -> Vec<String> {
            features
                .iter()
                .flat_map(|f| {
                    f.scenarios
                        .iter()
                        .chain(f.rules.iter().flat_map(|r| r.scenarios.iter()))
                        .map(|s| s.name.clone())
                })
                .collect()
        };
        let ordered = longest_first(vec![f.clone(), g.clone()], &expected);
        assert_eq!(names(&ordered), ["new", "long", "short", "r2", "r1", "g"]);
        let none = longest_first(vec![f.clone(), g.clone()], &HashMap::new());
        assert_eq!(names(&none), ["short", "long", "new", "r1", "r2", "g"]);
        let only_g = longest_first(vec![f, g], &known);
        assert_eq!(names(&only_g)[0], "short");
    }

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
    fn a_plan_knows_whether_it_selects_a_tag() {
        assert!(plan(None, &[]).selects_tagged("serial"));
        assert!(plan(None, &[]).selects_tagged("kueue"));
        assert!(!plan(None, &["Running"]).selects_tagged("kueue"));
        assert!(!plan(None, &[]).selects_tagged("kueue-upgrade"));
        assert_eq!(plan(None, &[]).tagged("serial"), 1);
        assert_eq!(plan(None, &["Restart"]).tagged("serial"), 0);
        assert_eq!(plan(None, &[]).not_selected(), 0);
        let some = plan(None, &["Running"]);
        assert_eq!(
            some.selected().len() + some.not_selected(),
            plan(None, &[]).selected().len()
        );
        assert!(some.not_selected() > 0);
    }

    mod order {
        use std::sync::Mutex;

        use cucumber::{World as _, WriterExt as _, given, writer};
        use futures::FutureExt as _;

        use super::*;

        pub static STARTED: Mutex<Vec<String>> = Mutex::new(Vec::new());

        #[derive(Debug, Default, cucumber::World)]
        pub struct OrderWorld;

        #[given(regex = r"^a step$")]
        async fn a_step(_: &mut OrderWorld) {}

        fn feature(name: &str, text: &str) -> Feature {
            parse_text(Path::new(name), text).unwrap()
        }

        /// cucumber itself, with the features in the order the built-in ones come: the
        /// upgrade scenario starts first although other `@serial` scenarios come before and
        /// after it.
        #[tokio::test]
        async fn cucumber_starts_the_upgrade_scenario_before_any_other() {
            let features = vec![
                feature(
                    "a.feature",
                    "Feature: A\n  Scenario: a1\n    Given a step\n  @serial\n  Scenario: a2\n    Given a step\n",
                ),
                feature(
                    "k.feature",
                    "Feature: K\n  Scenario: k1\n    Given a step\n  @serial\n  Scenario: k2\n    Given a step\n  @serial @kueue-upgrade\n  Scenario: upgrade\n    Given a step\n",
                ),
                feature(
                    "r.feature",
                    "@serial\nFeature: R\n  Scenario: r1\n    Given a step\n  Scenario: r2\n    Given a step\n",
                ),
            ];
            OrderWorld::cucumber::<std::path::PathBuf>()
                .with_parser(Prepared {
                    upgrade_alone: true,
                    expected: HashMap::new(),
                })
                .max_concurrent_scenarios(4)
                .before(|_, _, scenario, _| {
                    STARTED.lock().unwrap().push(scenario.name.clone());
                    async {}.boxed_local()
                })
                .with_writer(
                    writer::Basic::raw(std::io::sink(), writer::Coloring::Never, 0).normalized(),
                )
                .with_default_cli()
                .run(features)
                .await;
            let started = STARTED.lock().unwrap().clone();
            assert_eq!(started.len(), 7, "{started:?}");
            assert_eq!(started[0], "upgrade", "{started:?}");
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
