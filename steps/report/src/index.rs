//! `index.html`, the page reviewers open first: the features with their counts, the phase
//! diagram whose edges lead to the scenarios that took them, the parameters of the design
//! with the scenarios that test each, what was skipped and why, and every scenario.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use maud::{Markup, html};

use super::html::{anchor, href, page, status_cell, svg};
use super::parameters::{PARAMETERS, Parameter};
use crate::phase_diagram;
use crate::record::{Report, ScenarioRecord, Skipped};
use crate::status::Status;
use monitor::EdgeCoverage;

/// Scenarios of one feature, by outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureCounts {
    pub feature: String,
    pub passed: usize,
    pub failed: usize,
    pub flaky: usize,
    pub skipped: usize,
}

/// The features in the order of their files, each with its counts.
pub fn feature_counts(records: &[ScenarioRecord], skipped: &[Skipped]) -> Vec<FeatureCounts> {
    let mut by_file: BTreeMap<(String, String), FeatureCounts> = BTreeMap::new();
    let outcomes = records
        .iter()
        .map(|r| (&r.text.key.file, &r.feature, r.status()))
        .chain(
            skipped
                .iter()
                .map(|s| (&s.text.key.file, &s.feature, Status::Skipped)),
        );
    for (file, feature, status) in outcomes {
        let counts = by_file
            .entry((file.clone(), feature.clone()))
            .or_insert_with(|| FeatureCounts {
                feature: feature.clone(),
                ..FeatureCounts::default()
            });
        match status {
            Status::Passed => counts.passed += 1,
            Status::Failed => counts.failed += 1,
            Status::Flaky => counts.flaky += 1,
            Status::Skipped => counts.skipped += 1,
        }
    }
    by_file.into_values().collect()
}

/// A scenario as a list item: a link to its page, or its title when it has none.
fn scenario_item(title: &str, page: Option<&str>, status: Status) -> Markup {
    html! {
        li {
            @match page {
                Some(p) => a href=(href(p)) { (title) },
                None => (title),
            }
            " " span class=(status.as_str()) { (status.as_str()) }
        }
    }
}

/// The records that tested `parameter`, and the skipped scenarios that would have.
pub fn testing<'a>(
    parameter: &Parameter,
    records: &'a [ScenarioRecord],
    skipped: &'a [Skipped],
) -> (Vec<&'a ScenarioRecord>, Vec<&'a Skipped>) {
    (
        records
            .iter()
            .filter(|r| parameter.is_named_in(&r.text.searchable()))
            .collect(),
        skipped
            .iter()
            .filter(|s| parameter.is_named_in(&s.text.searchable()))
            .collect(),
    )
}

pub fn write(dir: &Path, report: &Report<'_>) -> anyhow::Result<PathBuf> {
    let path = dir.join("index.html");
    std::fs::write(&path, render(report)).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

pub fn render(report: &Report<'_>) -> String {
    let mut records: Vec<&ScenarioRecord> = report.records.iter().collect();
    records.sort_by(|a, b| a.text.key.cmp(&b.text.key));
    let body = html! {
        (header(report))
        (features(report))
        (diagram(report.coverage, &records))
        (parameters(report))
        (skipped(report.skipped))
        (scenarios(&records))
        h2 #files { "Files" }
        ul {
            li {
                a href="results.json" { "results.json" }
                " (for " code { "awconf report compare" } ")"
            }
            li { a href="junit.xml" { "junit.xml" } }
            li { a href="cucumber.json" { "cucumber.json" } }
            li { a href="harness.log" { "harness.log" } }
        }
    };
    page("AppWrapper conformance", body)
}

fn header(report: &Report<'_>) -> Markup {
    let s = report.summary;
    html! {
        h1 { "AppWrapper conformance" }
        p { (report.context) }
        p class=(if s.failed == 0 { "pass" } else { "fail" }) { (s.closing_line()) }
        p {
            (format!("{:.0}", s.duration.as_secs_f64())) " s; phase-diagram transitions taken: "
            (s.transitions_covered) " of " (s.transitions_total) "."
        }
        p {
            a href="#features" { "Features" } " · "
            a href="#diagram" { "Phase diagram" } " · "
            a href="#parameters" { "Parameters" } " · "
            a href="#skipped" { "Skipped" } " · "
            a href="#scenarios" { "Scenarios" } " · "
            a href=(super::specification::FILE) { "Specification" }
        }
    }
}

fn features(report: &Report<'_>) -> Markup {
    html! {
        h2 #features { "Features" }
        table.features {
            tr {
                @for heading in ["Feature", "Passed", "Failed", "Flaky", "Skipped"] {
                    th { (heading) }
                }
            }
            @for c in feature_counts(report.records, report.skipped) {
                tr {
                    td { a href={ "#feature-" (anchor(&c.feature)) } { (c.feature) } }
                    @for (n, class) in [
                        (c.passed, "passed"),
                        (c.failed, "failed"),
                        (c.flaky, "flaky"),
                        (c.skipped, "skipped"),
                    ] {
                        td.n.(class)[n > 0] { (n) }
                    }
                }
            }
        }
    }
}

fn diagram(coverage: &[EdgeCoverage], records: &[&ScenarioRecord]) -> Markup {
    html! {
        h2 #diagram { "Phase diagram" }
        p { "Each edge leads to the scenarios in which the monitor saw it taken." }
        (svg(phase_diagram::svg(coverage)))
        h3 { "Transitions and the scenarios that took them" }
        ul.edges {
            @for edge in coverage {
                (edge_item(edge, records))
            }
        }
    }
}

/// An edge: how often it was taken, and the scenarios that took it.
fn edge_item(edge: &EdgeCoverage, records: &[&ScenarioRecord]) -> Markup {
    html! {
        li id=(phase_diagram::edge_anchor(edge.from, edge.to)) {
            b { (edge.from) " → " (edge.to) }
            " "
            @if edge.namespaces.is_empty() {
                span.skipped { "not taken" }
            } @else {
                "seen " (edge.direct) " times"
                @if edge.inferred > 0 {
                    ", inferred " (edge.inferred) " times across a re-list"
                }
            }
            @if !edge.in_diagram {
                " (not drawn: allowed only on deletion)"
            }
            @if !edge.namespaces.is_empty() {
                ul.scenarios {
                    @for ns in &edge.namespaces {
                        @match records.iter().find(|r| &r.namespace == ns) {
                            Some(r) => (scenario_item(&r.title(), Some(&r.page()), r.status())),
                            None => li { "namespace " (ns) },
                        }
                    }
                }
            }
        }
    }
}

fn parameters(report: &Report<'_>) -> Markup {
    html! {
        h2 #parameters { "Parameters" }
        p {
            "The fault-tolerance parameters of the AppWrapper design, set for the whole \
             operator or per AppWrapper by annotation, and the scenarios whose text names them."
        }
        table.parameters {
            tr {
                @for heading in ["Parameter", "Default", "Annotation", "Scenarios"] {
                    th { (heading) }
                }
            }
            @for p in &PARAMETERS {
                tr id={ "parameter-" (anchor(p.name)) } {
                    td { (p.name) }
                    td { (p.default) }
                    td {
                        @match p.annotation_key() {
                            Some(key) => code { (key) },
                            None => "not applicable",
                        }
                    }
                    td { (testing_list(p, report)) }
                }
            }
        }
    }
}

/// The scenarios that tested `p`, or that none did.
fn testing_list(p: &Parameter, report: &Report<'_>) -> Markup {
    let (ran, skipped) = testing(p, report.records, report.skipped);
    html! {
        @if ran.is_empty() && skipped.is_empty() {
            span.failed { "none" }
        } @else {
            ul.scenarios {
                @for r in ran {
                    (scenario_item(&r.title(), Some(&r.page()), r.status()))
                }
                @for s in skipped {
                    (scenario_item(&s.title(), None, Status::Skipped))
                }
            }
        }
    }
}

fn skipped(skipped: &[Skipped]) -> Markup {
    html! {
        h2 #skipped { "Skipped" }
        @if skipped.is_empty() {
            p { "Nothing was skipped." }
        } @else {
            table.skipped {
                tr { th { "Feature" } th { "Scenario" } th { "Reason" } }
                @for s in skipped {
                    tr { td { (s.feature) } td { (s.scenario) } td { (s.reason) } }
                }
            }
        }
    }
}

fn scenarios(records: &[&ScenarioRecord]) -> Markup {
    html! {
        h2 #scenarios { "Scenarios" }
        @for feature in records.chunk_by(|a, b| a.feature == b.feature) {
            h3 id={ "feature-" (anchor(&feature[0].feature)) } { (feature[0].feature) }
            table.scenarios {
                tr {
                    @for heading in ["Result", "Scenario", "Seconds", "Namespace", "Details"] {
                        th { (heading) }
                    }
                }
                @for r in feature {
                    tr {
                        (status_cell(r.status()))
                        td { a href=(href(&r.page())) { (r.scenario) } }
                        td.n { (format!("{:.1}", r.seconds)) }
                        td { (r.namespace) }
                        td {
                            @match &r.failure {
                                Some(failure) => pre { (truncate(failure, 600)) },
                                None => (r.transitions.join(", ")),
                            }
                        }
                    }
                }
            }
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (see its page)", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gherkin::{ScenarioKey, ScenarioText, StepText};
    use crate::run_summary::Summary;
    use std::collections::BTreeSet;

    fn text(file: &str, line: usize, step: &str) -> ScenarioText {
        ScenarioText {
            key: ScenarioKey {
                file: file.into(),
                line,
            },
            steps: vec![StepText {
                text: step.into(),
                ..StepText::default()
            }],
            ..ScenarioText::default()
        }
    }

    fn record(
        feature: &str,
        scenario: &str,
        line: usize,
        passed: bool,
        flaky: bool,
    ) -> ScenarioRecord {
        ScenarioRecord {
            feature: feature.into(),
            scenario: scenario.into(),
            namespace: format!("aw-{line}"),
            passed,
            flaky,
            failure: (!passed).then(|| "boom".into()),
            text: text(&format!("{feature}.feature"), line, "| retryLimit | 1 |"),
            ..ScenarioRecord::default()
        }
    }

    fn skipped(feature: &str, line: usize) -> Skipped {
        Skipped {
            feature: feature.into(),
            scenario: "gpu".into(),
            reason: "@gpu: needs nodes".into(),
            text: text(
                &format!("{feature}.feature"),
                line,
                "its pods request 1 GPU",
            ),
        }
    }

    #[test]
    fn features_are_counted_in_file_order() {
        let records = [
            record("phases", "a", 3, true, false),
            record("deletion", "b", 3, false, false),
            record("phases", "c", 9, true, true),
        ];
        let counts = feature_counts(&records, &[skipped("phases", 20), skipped("webhook", 2)]);
        let got: Vec<(&str, usize, usize, usize, usize)> = counts
            .iter()
            .map(|c| (c.feature.as_str(), c.passed, c.failed, c.flaky, c.skipped))
            .collect();
        assert_eq!(
            got,
            vec![
                ("deletion", 0, 1, 0, 0),
                ("phases", 1, 0, 1, 1),
                ("webhook", 0, 0, 0, 1)
            ]
        );
    }

    #[test]
    fn the_index_links_edges_parameters_and_pages() {
        use appwrapper_controller::api::Phase::*;
        let records = [
            record("phases", "a <b>", 3, true, false),
            record("phases", "c", 9, false, false),
        ];
        let coverage = [EdgeCoverage {
            from: Running,
            to: Succeeded,
            direct: 1,
            inferred: 0,
            namespaces: BTreeSet::from(["aw-3".to_string()]),
            in_diagram: true,
        }];
        let summary = Summary {
            passed: 1,
            failed: 1,
            ..Summary::default()
        };
        let skips = [skipped("phases", 20)];
        let html = render(&Report {
            summary: &summary,
            records: &records,
            skipped: &skips,
            coverage: &coverage,
            context: "embedded",
        });
        let expected = [
            "1 passed, 1 failed",
            "href=\"#edge-running-succeeded\"",
            "<li id=\"edge-running-succeeded\"><b>Running → Succeeded</b> seen 1 times",
            "<li><a href=\"scenarios/aw-3/index.html\">phases: a &lt;b&gt;</a>",
            "<tr id=\"parameter-retrylimit\"><td>RetryLimit</td>",
            "@gpu: needs nodes",
            "<td class=\"failed\">failed</td>",
            "<a href=\"#feature-phases\">phases</a>",
        ];
        for want in expected {
            assert!(html.contains(want), "{want} missing");
        }
        assert!(!html.contains("<script"));
    }

    #[test]
    fn hostile_text_is_escaped() {
        use crate::html::hostile::{ESCAPED as SAFE, TEXT as HOSTILE, assert_escaped};
        let mut failed = record(HOSTILE, HOSTILE, 3, false, false);
        failed.failure = Some(format!("log line: {HOSTILE}"));
        let mut passed = record("phases", HOSTILE, 9, true, false);
        passed.transitions = vec![HOSTILE.into()];
        let mut skip = skipped(HOSTILE, 20);
        skip.reason = HOSTILE.into();
        skip.text = text("x.feature", 20, "| retryLimit | 1 |");
        let coverage = [EdgeCoverage {
            from: appwrapper_controller::api::Phase::Running,
            to: appwrapper_controller::api::Phase::Succeeded,
            direct: 1,
            inferred: 0,
            namespaces: BTreeSet::from([HOSTILE.to_string()]),
            in_diagram: true,
        }];
        let html = render(&Report {
            summary: &Summary::default(),
            records: &[failed, passed],
            skipped: &[skip],
            coverage: &coverage,
            context: HOSTILE,
        });
        assert_escaped(
            &html,
            &[
                format!("<p>{SAFE}</p>"),
                format!("<a href=\"#feature-script\">{SAFE}</a>"),
                format!("<li>namespace {SAFE}</li>"),
                format!("<li>{SAFE}: gpu <span class=\"skipped\">skipped</span></li>"),
                format!("<tr><td>{SAFE}</td><td>gpu</td><td>{SAFE}</td></tr>"),
                format!("<h3 id=\"feature-script\">{SAFE}</h3>"),
                format!("<a href=\"scenarios/aw-3/index.html\">{SAFE}</a>"),
                format!("<pre>log line: {SAFE}</pre>"),
                format!("<td>{SAFE}</td></tr>"),
            ],
        );
    }
}
