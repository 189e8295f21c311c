//! `index.html`, the page reviewers open first: the features with their counts, the phase
//! diagram whose edges lead to the scenarios that took them, the parameters of the design
//! with the scenarios that test each, what was skipped and why, and every scenario.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::html::{anchor, escape, href, page, status_cell};
use super::parameters::{PARAMETERS, Parameter};
use super::{Report, ScenarioRecord, Skipped, Status, phase_diagram};
use crate::monitor::EdgeCoverage;

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
fn scenario_item(title: &str, page: Option<&str>, status: Status, note: &str) -> String {
    let name = match page {
        Some(p) => format!("<a href=\"{}\">{}</a>", href(p), escape(title)),
        None => escape(title),
    };
    format!(
        "<li>{name} <span class=\"{0}\">{0}</span>{1}</li>",
        status.as_str(),
        if note.is_empty() {
            String::new()
        } else {
            format!(" — {}", escape(note))
        }
    )
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
    let mut body = String::new();
    body.push_str(&header(report));
    body.push_str(&features(report));
    body.push_str(&diagram(report.coverage, &records));
    body.push_str(&parameters(report));
    body.push_str(&skipped(report.skipped));
    body.push_str(&scenarios(&records));
    body.push_str(
        "<h2 id=\"files\">Files</h2>\n<ul><li><a href=\"results.json\">results.json</a> (for \
         <code>awconf report compare</code>)</li><li><a href=\"junit.xml\">junit.xml</a></li>\
         <li><a href=\"cucumber.json\">cucumber.json</a></li><li><a href=\"harness.log\">\
         harness.log</a></li></ul>\n",
    );
    page("AppWrapper conformance", &body)
}

fn header(report: &Report<'_>) -> String {
    let s = report.summary;
    format!(
        "<h1>AppWrapper conformance</h1>\n<p>{}</p>\n<p class=\"{}\">{}</p>\n<p>{:.0} s; \
         phase-diagram transitions taken: {} of {}.</p>\n<p><a href=\"#features\">Features</a> · \
         <a href=\"#diagram\">Phase diagram</a> · <a href=\"#parameters\">Parameters</a> · \
         <a href=\"#skipped\">Skipped</a> · <a href=\"#scenarios\">Scenarios</a></p>\n",
        escape(report.context),
        if s.failed == 0 { "pass" } else { "fail" },
        escape(&s.closing_line()),
        s.duration.as_secs_f64(),
        s.transitions_covered,
        s.transitions_total,
    )
}

fn features(report: &Report<'_>) -> String {
    let mut out = String::from(
        "<h2 id=\"features\">Features</h2>\n<table class=\"features\"><tr><th>Feature</th>\
         <th>Passed</th><th>Failed</th><th>Flaky</th><th>Skipped</th></tr>\n",
    );
    for c in feature_counts(report.records, report.skipped) {
        let cell = |n: usize, class: &str| {
            if n == 0 {
                "<td class=\"n\">0</td>".to_string()
            } else {
                format!("<td class=\"n {class}\">{n}</td>")
            }
        };
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#feature-{}\">{}</a></td>{}{}{}{}</tr>",
            anchor(&c.feature),
            escape(&c.feature),
            cell(c.passed, "passed"),
            cell(c.failed, "failed"),
            cell(c.flaky, "flaky"),
            cell(c.skipped, "skipped"),
        );
    }
    out.push_str("</table>\n");
    out
}

fn diagram(coverage: &[EdgeCoverage], records: &[&ScenarioRecord]) -> String {
    let mut out = String::from(
        "<h2 id=\"diagram\">Phase diagram</h2>\n<p>Each edge leads to the scenarios in which \
         the monitor saw it taken.</p>\n",
    );
    out.push_str(&phase_diagram::svg(coverage));
    out.push_str("<h3>Transitions and the scenarios that took them</h3>\n<ul class=\"edges\">\n");
    for edge in coverage {
        let _ = write!(
            out,
            "<li id=\"{}\"><b>{} → {}</b> ",
            phase_diagram::edge_anchor(edge.from, edge.to),
            edge.from,
            edge.to,
        );
        if edge.namespaces.is_empty() {
            out.push_str("<span class=\"skipped\">not taken</span>");
        } else {
            let _ = write!(
                out,
                "seen {} times{}",
                edge.direct,
                if edge.inferred > 0 {
                    format!(", inferred {} times across a re-list", edge.inferred)
                } else {
                    String::new()
                }
            );
        }
        if !edge.in_diagram {
            out.push_str(" (not drawn: allowed only on deletion)");
        }
        if !edge.namespaces.is_empty() {
            out.push_str("\n<ul class=\"scenarios\">\n");
            for ns in &edge.namespaces {
                match records.iter().find(|r| &r.namespace == ns) {
                    Some(r) => {
                        out.push_str(&scenario_item(&r.title(), Some(&r.page()), r.status(), ""))
                    }
                    None => {
                        let _ = write!(out, "<li>namespace {}</li>", escape(ns));
                    }
                }
                out.push('\n');
            }
            out.push_str("</ul>");
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
    out
}

fn parameters(report: &Report<'_>) -> String {
    let mut out = String::from(
        "<h2 id=\"parameters\">Parameters</h2>\n<p>The fault-tolerance parameters of the \
         AppWrapper design, set for the whole operator or per AppWrapper by annotation, and \
         the scenarios whose text names them.</p>\n<table class=\"parameters\"><tr>\
         <th>Parameter</th><th>Default</th><th>Annotation</th><th>Scenarios</th></tr>\n",
    );
    for p in &PARAMETERS {
        let (ran, skipped) = testing(p, report.records, report.skipped);
        let mut list = String::new();
        if ran.is_empty() && skipped.is_empty() {
            list.push_str("<span class=\"failed\">none</span>");
        } else {
            list.push_str("<ul class=\"scenarios\">");
            for r in ran {
                list.push_str(&scenario_item(&r.title(), Some(&r.page()), r.status(), ""));
            }
            for s in skipped {
                list.push_str(&scenario_item(&s.title(), None, Status::Skipped, ""));
            }
            list.push_str("</ul>");
        }
        let _ = writeln!(
            out,
            "<tr id=\"parameter-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{list}</td></tr>",
            anchor(p.name),
            p.name,
            p.default,
            p.annotation_key()
                .map(|k| format!("<code>{}</code>", escape(&k)))
                .unwrap_or_else(|| "not applicable".into()),
        );
    }
    out.push_str("</table>\n");
    out
}

fn skipped(skipped: &[Skipped]) -> String {
    let mut out = String::from("<h2 id=\"skipped\">Skipped</h2>\n");
    if skipped.is_empty() {
        out.push_str("<p>Nothing was skipped.</p>\n");
        return out;
    }
    out.push_str(
        "<table class=\"skipped\"><tr><th>Feature</th><th>Scenario</th><th>Reason</th></tr>\n",
    );
    for s in skipped {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s.feature),
            escape(&s.scenario),
            escape(&s.reason)
        );
    }
    out.push_str("</table>\n");
    out
}

fn scenarios(records: &[&ScenarioRecord]) -> String {
    let mut out = String::from("<h2 id=\"scenarios\">Scenarios</h2>\n");
    let mut current: Option<&str> = None;
    for r in records {
        if current != Some(r.feature.as_str()) {
            if current.is_some() {
                out.push_str("</table>\n");
            }
            current = Some(&r.feature);
            let _ = writeln!(
                out,
                "<h3 id=\"feature-{}\">{}</h3>\n<table class=\"scenarios\"><tr><th>Result</th>\
                 <th>Scenario</th><th>Seconds</th><th>Namespace</th><th>Details</th></tr>",
                anchor(&r.feature),
                escape(&r.feature)
            );
        }
        let details = match &r.failure {
            Some(failure) => format!("<pre>{}</pre>", escape(&truncate(failure, 600))),
            None => escape(&r.transitions.join(", ")),
        };
        let _ = writeln!(
            out,
            "<tr>{}<td><a href=\"{}\">{}</a></td><td class=\"n\">{:.1}</td><td>{}</td><td>{}</td></tr>",
            status_cell(r.status()),
            href(&r.page()),
            escape(&r.scenario),
            r.seconds,
            escape(&r.namespace),
            details
        );
    }
    if current.is_some() {
        out.push_str("</table>\n");
    }
    out
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
    use crate::options::Summary;
    use crate::report::gherkin::{ScenarioKey, ScenarioText, StepText};
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
}
