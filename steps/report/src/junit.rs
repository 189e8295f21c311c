//! The run as JUnit XML (quick-junit): a test suite per feature file, a test case per
//! scenario. Retries are written as Maven Surefire writes reruns, which CI test reporters read:
//! a flaky scenario is a passed case with a `<flakyFailure>` per failed attempt, a scenario
//! that failed every attempt keeps its earlier failures as `<rerunFailure>`. Scenarios not run
//! for the controller under test are `<skipped>` cases with the reason. Each case carries a
//! `behaviour` property per behaviour of the specification its scenario checks, so that a CI
//! summary can say which behaviours a controller breaks.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use crate::record::{ScenarioRecord, Skipped};
use crate::status::Status;

/// The name of a test case's property that names a behaviour it checks.
pub const BEHAVIOUR_PROPERTY: &str = "behaviour";

pub fn render(records: &[ScenarioRecord], skipped: &[Skipped], seconds: f64) -> String {
    let mut report = Report::new("awconf");
    report.set_time(Duration::from_secs_f64(seconds.max(0.0)));
    let cases = records
        .iter()
        .map(|r| (r.text.key.file.as_str(), r.feature.as_str(), ran(r)))
        .chain(skipped.iter().map(|s| {
            let mut status = TestCaseStatus::skipped();
            status.set_message(s.reason.as_str());
            let mut case = TestCase::new(s.scenario.as_str(), status);
            case.set_classname(s.feature.as_str())
                .set_time(Duration::ZERO)
                .add_properties(behaviours(&s.text.tags));
            (s.text.key.file.as_str(), s.feature.as_str(), case)
        }));
    let mut suites: Vec<TestSuite> = Vec::new();
    for (file, feature, case) in cases {
        let at = suites.iter().position(|s| {
            s.name.as_str() == feature && s.extra.get("file").map(|f| f.as_str()) == Some(file)
        });
        let suite = match at {
            Some(i) => &mut suites[i],
            None => {
                let mut suite = TestSuite::new(feature);
                suite.extra.insert("file".into(), file.into());
                suites.push(suite);
                suites.last_mut().expect("just pushed")
            }
        };
        let time = suite.time.unwrap_or_default() + case.time.unwrap_or_default();
        suite.set_time(time);
        suite.add_test_case(case);
    }
    report.add_test_suites(suites);
    report
        .to_string()
        .expect("a report of valid strings serializes")
}

fn ran(record: &ScenarioRecord) -> TestCase {
    let attempts = record.earlier.len() + 1;
    let earlier = record.earlier.iter().map(|a| failure(&a.failure));
    let (status, note) = match record.status() {
        Status::Failed => {
            let text = record.failure.as_deref().unwrap_or("failed");
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_message(first_line(text))
                .set_type("scenario failed")
                .set_description(text)
                .add_reruns(earlier);
            let note = (attempts > 1).then(|| format!("failed all {attempts} attempts"));
            (status, note)
        }
        Status::Flaky => {
            let status = TestCaseStatus::Success {
                flaky_runs: earlier.collect(),
            };
            let note = format!(
                "flaky: failed {} time{} and passed on attempt {attempts}",
                attempts - 1,
                if attempts == 2 { "" } else { "s" }
            );
            (status, Some(note))
        }
        Status::Passed => (TestCaseStatus::success(), None),
        Status::Skipped => (TestCaseStatus::skipped(), None),
    };
    let place = format!(
        "{}:{} in namespace {}",
        record.text.key.file, record.text.key.line, record.namespace
    );
    let out = match note {
        Some(note) => format!("{note}\n{place}"),
        None => place,
    };
    let seconds = record.seconds + record.earlier.iter().map(|a| a.seconds).sum::<f64>();
    let mut case = TestCase::new(record.scenario.as_str(), status);
    case.set_classname(record.feature.as_str())
        .set_time(Duration::from_secs_f64(seconds.max(0.0)))
        .set_system_out(out)
        .add_properties(behaviours(&record.text.tags));
    case
}

/// A `behaviour` property for each behaviour the tags name.
fn behaviours(tags: &[String]) -> Vec<(&str, &str)> {
    features::spec::behaviour_ids(tags)
        .into_iter()
        .map(|id| (BEHAVIOUR_PROPERTY, id))
        .collect()
}

fn failure(text: &str) -> TestRerun {
    let mut rerun = TestRerun::new(NonSuccessKind::Failure);
    rerun
        .set_message(first_line(text))
        .set_type("scenario failed")
        .set_description(text);
    rerun
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempts::merge;
    use crate::gherkin::{ScenarioKey, ScenarioText};

    fn text(file: &str, line: usize) -> ScenarioText {
        ScenarioText {
            key: ScenarioKey {
                file: file.into(),
                line,
            },
            ..ScenarioText::default()
        }
    }

    fn attempt(file: &str, line: usize, passed: bool) -> ScenarioRecord {
        ScenarioRecord {
            feature: "F".into(),
            scenario: format!("s{line}"),
            passed,
            failure: (!passed).then(|| "boom\nat step 3".into()),
            text: text(file, line),
            ..ScenarioRecord::default()
        }
    }

    fn status_of<'a>(report: &'a Report, scenario: &str) -> &'a TestCaseStatus {
        let case = report
            .test_suites
            .iter()
            .flat_map(|s| &s.test_cases)
            .find(|c| c.name.as_str() == scenario)
            .unwrap_or_else(|| panic!("no case {scenario}"));
        &case.status
    }

    #[test]
    fn each_outcome_is_written_as_ci_reporters_read_it() {
        let records = merge(vec![
            attempt("features/p.feature", 3, true),
            attempt("features/p.feature", 9, false),
            attempt("features/p.feature", 9, true),
            attempt("mine/m.feature", 4, false),
            attempt("mine/m.feature", 4, false),
        ]);
        let skipped = [Skipped {
            feature: "F".into(),
            scenario: "gpu".into(),
            reason: "@gpu: needs nodes".into(),
            text: text("features/p.feature", 20),
        }];
        let xml = render(&records, &skipped, 5.0);
        let report = Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(
            (report.tests, report.failures, report.skipped),
            (4, 1, 1),
            "{xml}"
        );
        let suites: Vec<(&str, &str, usize, usize, usize)> = report
            .test_suites
            .iter()
            .map(|s| {
                (
                    s.name.as_str(),
                    s.extra["file"].as_str(),
                    s.tests,
                    s.failures,
                    s.skipped,
                )
            })
            .collect();
        assert_eq!(
            suites,
            [
                ("F", "features/p.feature", 3, 0, 1),
                ("F", "mine/m.feature", 1, 1, 0)
            ]
        );
        assert!(
            matches!(status_of(&report, "s3"), TestCaseStatus::Success { flaky_runs } if flaky_runs.is_empty())
        );
        let TestCaseStatus::Success { flaky_runs } = status_of(&report, "s9") else {
            panic!("s9 passed on its second attempt")
        };
        assert_eq!(flaky_runs.len(), 1);
        assert_eq!(flaky_runs[0].message.as_ref().unwrap().as_str(), "boom");
        let TestCaseStatus::NonSuccess {
            message, reruns, ..
        } = status_of(&report, "s4")
        else {
            panic!("s4 failed both attempts")
        };
        assert_eq!(message.as_ref().unwrap().as_str(), "boom");
        assert_eq!(
            (reruns.kind, reruns.runs.len()),
            (quick_junit::FlakyOrRerun::Rerun, 1)
        );
        assert!(
            matches!(status_of(&report, "gpu"), TestCaseStatus::Skipped { message: Some(m), .. } if m.as_str() == "@gpu: needs nodes")
        );
        for needle in [
            "<flakyFailure",
            "<rerunFailure",
            "flaky: failed 1 time and passed on attempt 2",
            "failed all 2 attempts",
        ] {
            assert_eq!(xml.matches(needle).count(), 1, "{needle}\n{xml}");
        }
    }

    #[test]
    fn each_case_names_the_behaviours_its_scenario_checks() {
        let mut checked = attempt("features/p.feature", 3, false);
        checked.text.tags = vec![
            "serial".into(),
            "behaviour:FT-EXIT-TERMINAL".into(),
            "behaviour:FT-RETRY-LIMIT".into(),
        ];
        let mut skipped_text = text("features/p.feature", 20);
        skipped_text.tags = vec!["behaviour:FT-WATCH-PODS".into()];
        let skipped = [Skipped {
            feature: "F".into(),
            scenario: "quick".into(),
            reason: "@extension: not the reference's".into(),
            text: skipped_text,
        }];
        let xml = render(&[checked], &skipped, 1.0);
        let report = Report::deserialize_from_str(&xml).unwrap();
        let properties = |name: &str| -> Vec<(String, String)> {
            report
                .test_suites
                .iter()
                .flat_map(|s| &s.test_cases)
                .find(|c| c.name.as_str() == name)
                .unwrap()
                .properties
                .iter()
                .map(|p| (p.name.to_string(), p.value.to_string()))
                .collect()
        };
        let named = |ids: &[&str]| -> Vec<(String, String)> {
            ids.iter()
                .map(|id| (BEHAVIOUR_PROPERTY.to_string(), id.to_string()))
                .collect()
        };
        assert_eq!(
            properties("s3"),
            named(&["FT-EXIT-TERMINAL", "FT-RETRY-LIMIT"])
        );
        assert_eq!(properties("quick"), named(&["FT-WATCH-PODS"]));
    }

    #[test]
    fn text_is_escaped_and_terminal_colours_dropped() {
        let mut failed = attempt("features/p.feature", 3, false);
        failed.failure = Some("a <b> & \"c\" \u{1b}[31mred\u{1b}[0m".into());
        let xml = render(&[failed], &[], 1.0);
        assert!(xml.contains("a &lt;b&gt; &amp; &quot;c&quot; red"), "{xml}");
        let report = Report::deserialize_from_str(&xml).unwrap();
        let TestCaseStatus::NonSuccess { description, .. } = status_of(&report, "s3") else {
            panic!("s3 failed")
        };
        assert_eq!(description.as_ref().unwrap().as_str(), "a <b> & \"c\" red");
    }
}
