//! Reports of a run: the scenario records, the HTML page with the phase diagram, and the
//! artifacts of failed scenarios. JUnit XML and cucumber JSON come from cucumber's writers.

pub mod artifacts;
pub mod events;
pub mod gherkin;
pub mod logs;
pub mod recorder;
pub mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::monitor::EdgeCoverage;
use crate::options::Summary;

/// How one scenario went.
#[derive(Clone, Debug)]
pub struct ScenarioRecord {
    pub feature: String,
    pub scenario: String,
    pub namespace: String,
    pub passed: bool,
    pub failure: Option<String>,
    pub seconds: f64,
    /// Where its artifacts are, when it failed.
    pub artifacts: Option<PathBuf>,
    /// The phase changes the monitor saw in its namespace (`A → B`).
    pub transitions: Vec<String>,
}

impl ScenarioRecord {
    pub fn title(&self) -> String {
        format!("{}: {}", self.feature, self.scenario)
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Writes `index.html` into the report directory.
pub fn write_html(
    dir: &Path,
    summary: &Summary,
    records: &[ScenarioRecord],
    coverage: &[EdgeCoverage],
    context: &str,
) -> anyhow::Result<PathBuf> {
    let mut html = String::new();
    let _ = write!(
        html,
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>AppWrapper conformance</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #212121; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #cfd8dc; padding: 4px 8px; text-align: left; vertical-align: top; }}
.pass {{ color: #2e7d32; font-weight: bold; }} .fail {{ color: #c62828; font-weight: bold; }}
pre {{ white-space: pre-wrap; max-width: 70em; margin: 0; font-size: 12px; }}
</style></head><body>
<h1>AppWrapper conformance</h1>
<p>{context}</p>
<p class="{cls}">{line}</p>
<p>{secs:.0} s; phase-diagram transitions taken: {covered} of {total}.</p>
"#,
        context = escape(context),
        cls = if summary.failed == 0 { "pass" } else { "fail" },
        line = escape(&summary.closing_line()),
        secs = summary.duration.as_secs_f64(),
        covered = summary.transitions_covered,
        total = summary.transitions_total,
    );
    html.push_str("<h2>Phase diagram</h2>\n");
    html.push_str(&svg::phase_diagram(coverage));
    html.push_str("<h2>Transitions</h2>\n<table><tr><th>From</th><th>To</th><th>Seen</th><th>Inferred</th><th>Scenarios</th></tr>\n");
    for edge in coverage {
        let scenarios: Vec<String> = edge
            .namespaces
            .iter()
            .map(|ns| {
                records
                    .iter()
                    .find(|r| &r.namespace == ns)
                    .map_or_else(|| ns.clone(), ScenarioRecord::title)
            })
            .collect();
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>",
            edge.from,
            edge.to,
            edge.direct,
            edge.inferred,
            escape(&scenarios.join("; ")),
            if edge.in_diagram {
                ""
            } else {
                " (not drawn: allowed only on deletion)"
            }
        );
    }
    html.push_str("</table>\n<h2>Scenarios</h2>\n<table><tr><th>Result</th><th>Feature</th><th>Scenario</th><th>Seconds</th><th>Namespace</th><th>Details</th></tr>\n");
    for r in records {
        let details = match (&r.failure, &r.artifacts) {
            (Some(failure), Some(_)) => format!(
                "<pre>{}</pre><a href=\"scenarios/{}/failure.txt\">artifacts</a>",
                escape(&truncate(failure, 4000)),
                escape(&r.namespace)
            ),
            (Some(failure), None) => format!("<pre>{}</pre>", escape(&truncate(failure, 4000))),
            _ => escape(&r.transitions.join(", ")),
        };
        let _ = writeln!(
            html,
            "<tr><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            if r.passed { "pass" } else { "fail" },
            if r.passed { "passed" } else { "failed" },
            escape(&r.feature),
            escape(&r.scenario),
            r.seconds,
            escape(&r.namespace),
            details
        );
    }
    html.push_str("</table>\n</body></html>\n");
    let path = dir.join("index.html");
    std::fs::write(&path, html).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (see the artifacts)", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_lists_scenarios_and_draws_the_diagram() {
        let dir = std::env::temp_dir().join(format!("awconf-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let records = vec![ScenarioRecord {
            feature: "Phases".into(),
            scenario: "a <b> c".into(),
            namespace: "aw-1-x".into(),
            passed: false,
            failure: Some("boom".into()),
            seconds: 1.5,
            artifacts: Some(dir.join("scenarios").join("aw-1-x")),
            transitions: vec![],
        }];
        let summary = Summary {
            passed: 0,
            failed: 1,
            transitions_total: 20,
            ..Summary::default()
        };
        let path = write_html(&dir, &summary, &records, &[], "embedded").unwrap();
        let html = std::fs::read_to_string(path).unwrap();
        assert!(html.contains("0 passed, 1 failed"));
        assert!(html.contains("a &lt;b&gt; c"));
        assert!(html.contains("scenarios/aw-1-x/failure.txt"));
        assert!(html.contains("<svg"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
