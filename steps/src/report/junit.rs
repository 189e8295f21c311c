//! The run as JUnit XML: a test suite per feature file, a test case per scenario. Retries are
//! written as Maven Surefire writes reruns, which CI test reporters read: a flaky scenario is
//! a passed case with a `<flakyFailure>` per failed attempt, a scenario that failed every
//! attempt keeps its earlier failures as `<rerunFailure>`. Scenarios not run for the
//! controller under test are `<skipped>` cases with the reason.

use std::fmt::Write as _;

use super::{ScenarioRecord, Skipped, Status};

pub fn render(records: &[ScenarioRecord], skipped: &[Skipped], seconds: f64) -> String {
    let cases: Vec<Case> = records
        .iter()
        .map(Case::Ran)
        .chain(skipped.iter().map(Case::Skipped))
        .collect();
    let count = |status| cases.iter().filter(|c| c.status() == status).count();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"awconf\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{seconds:.3}\">",
        cases.len(),
        count(Status::Failed),
        count(Status::Skipped),
    );
    for (file, feature, cases) in by_feature(&cases) {
        let failures = cases
            .iter()
            .filter(|c| c.status() == Status::Failed)
            .count();
        let skipped = cases
            .iter()
            .filter(|c| c.status() == Status::Skipped)
            .count();
        let time: f64 = cases.iter().map(|c| c.seconds()).sum();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" file=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{time:.3}\">",
            escape(feature),
            escape(file),
            cases.len(),
        );
        for case in cases {
            match case {
                Case::Ran(record) => ran(&mut xml, record),
                Case::Skipped(s) => {
                    let _ = writeln!(
                        xml,
                        "    <testcase classname=\"{}\" name=\"{}\" time=\"0.000\">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(&s.feature),
                        escape(&s.scenario),
                        escape(&s.reason)
                    );
                }
            }
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

enum Case<'a> {
    Ran(&'a ScenarioRecord),
    Skipped(&'a Skipped),
}

impl Case<'_> {
    fn status(&self) -> Status {
        match self {
            Case::Ran(r) => r.status(),
            Case::Skipped(_) => Status::Skipped,
        }
    }

    fn seconds(&self) -> f64 {
        match self {
            Case::Ran(r) => r.seconds + r.earlier.iter().map(|a| a.seconds).sum::<f64>(),
            Case::Skipped(_) => 0.0,
        }
    }

    fn file_and_feature(&self) -> (&str, &str) {
        match self {
            Case::Ran(r) => (&r.text.key.file, &r.feature),
            Case::Skipped(s) => (&s.text.key.file, &s.feature),
        }
    }
}

fn ran(xml: &mut String, record: &ScenarioRecord) {
    let attempts = record.earlier.len() + 1;
    let _ = writeln!(
        xml,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\">",
        escape(&record.feature),
        escape(&record.scenario),
        Case::Ran(record).seconds()
    );
    let (earlier, note) = match record.status() {
        Status::Failed => {
            failure(
                xml,
                "failure",
                record.failure.as_deref().unwrap_or("failed"),
            );
            (
                "rerunFailure",
                (attempts > 1).then(|| format!("failed all {attempts} attempts")),
            )
        }
        Status::Flaky => (
            "flakyFailure",
            Some(format!(
                "flaky: failed {} time{} and passed on attempt {attempts}",
                attempts - 1,
                if attempts == 2 { "" } else { "s" }
            )),
        ),
        Status::Passed | Status::Skipped => ("", None),
    };
    for attempt in &record.earlier {
        failure(xml, earlier, &attempt.failure);
    }
    let mut out = format!(
        "{}:{} in namespace {}",
        record.text.key.file, record.text.key.line, record.namespace
    );
    if let Some(note) = note {
        out = format!("{note}\n{out}");
    }
    let _ = writeln!(xml, "      <system-out>{}</system-out>", escape(&out));
    xml.push_str("    </testcase>\n");
}

fn failure(xml: &mut String, element: &str, text: &str) {
    let message = text.lines().next().unwrap_or_default();
    let _ = writeln!(
        xml,
        "      <{element} message=\"{}\" type=\"scenario failed\">{}</{element}>",
        escape(message),
        escape(text)
    );
}

/// (file, feature name, cases) in the order the features first appear.
fn by_feature<'a>(cases: &'a [Case<'a>]) -> Vec<(&'a str, &'a str, Vec<&'a Case<'a>>)> {
    let mut groups: Vec<(&str, &str, Vec<&Case>)> = Vec::new();
    for case in cases {
        let (file, feature) = case.file_and_feature();
        match groups
            .iter_mut()
            .find(|(f, name, _)| *f == file && *name == feature)
        {
            Some((_, _, members)) => members.push(case),
            None => groups.push((file, feature, vec![case])),
        }
    }
    groups
}

/// Text for XML content and attributes: escaped as for HTML, less the characters XML 1.0
/// cannot hold (terminal colour escapes in step errors).
fn escape(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| *c >= ' ' || matches!(c, '\t' | '\n' | '\r'))
        .collect();
    super::html::escape(&kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::attempts::merge;
    use crate::report::gherkin::{ScenarioKey, ScenarioText};

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
        let table: &[(&str, usize)] = &[
            (
                "<testsuites name=\"awconf\" tests=\"4\" failures=\"1\" skipped=\"1\"",
                1,
            ),
            (
                "<testsuite name=\"F\" file=\"features/p.feature\" tests=\"3\" failures=\"0\" skipped=\"1\"",
                1,
            ),
            (
                "<testsuite name=\"F\" file=\"mine/m.feature\" tests=\"1\" failures=\"1\" skipped=\"0\"",
                1,
            ),
            ("<testcase ", 4),
            ("<flakyFailure message=\"boom\"", 1),
            ("flaky: failed 1 time and passed on attempt 2", 1),
            ("<failure message=\"boom\"", 1),
            ("<rerunFailure message=\"boom\"", 1),
            ("failed all 2 attempts", 1),
            ("<skipped message=\"@gpu: needs nodes\"/>", 1),
        ];
        for (needle, times) in table {
            assert_eq!(xml.matches(needle).count(), *times, "{needle}\n{xml}");
        }
    }

    #[test]
    fn text_is_escaped_and_control_characters_dropped() {
        assert_eq!(
            escape("a <b> & \"c\"\u{1b}[31m\n"),
            "a &lt;b&gt; &amp; &quot;c&quot;[31m\n"
        );
    }
}
