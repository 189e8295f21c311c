//! The conformance matrix, `awconf report compare DIR...`: one row per scenario, one column per
//! run (a report directory, read through its `results.json`), each cell its outcome linked to
//! the scenario's page in that run. Rows where the runs disagree are marked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use anyhow::Context as _;
use maud::{Markup, html};

use super::html::{href, page};
use super::results::{RunResults, ScenarioResult};
use crate::status::Status;

/// One run as a column: what it is called, where it is from the matrix, and its results.
#[derive(Clone, Debug)]
pub struct Column {
    pub label: String,
    /// The run's report directory, relative to the matrix's directory (`/`-separated).
    pub dir: String,
    pub results: RunResults,
}

/// What a comparison found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    pub scenarios: usize,
    pub runs: usize,
    /// Scenarios whose outcome is not the same in every run.
    pub differing: usize,
    /// One line per differing scenario: its outcome in each run, with each failure's page.
    pub differences: Vec<String>,
}

/// A run's scenarios by outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCounts {
    pub passed: usize,
    pub failed: usize,
    pub flaky: usize,
    pub skipped: usize,
}

impl RunCounts {
    pub fn of(results: &RunResults) -> RunCounts {
        let count = |status| {
            results
                .scenarios
                .iter()
                .filter(|s| s.status == status)
                .count()
        };
        RunCounts {
            passed: count(Status::Passed) + count(Status::Flaky),
            failed: count(Status::Failed),
            flaky: count(Status::Flaky),
            skipped: count(Status::Skipped),
        }
    }

    /// `N passed, N failed[, N skipped][, N flaky]`.
    pub fn closing_line(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed, self.failed);
        if self.skipped > 0 {
            line += &format!(", {} skipped", self.skipped);
        }
        if self.flaky > 0 {
            line += &format!(", {} flaky", self.flaky);
        }
        line
    }
}

/// `to` relative to the directory `from`; both absolute and without `.` or `..`.
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for c in &to[common..] {
        path.push(c);
    }
    if path.as_os_str().is_empty() {
        path.push(".");
    }
    path
}

fn slashed(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads the runs in `dirs` and writes their matrix to `output`; each column is called by its
/// directory.
pub fn compare(dirs: &[PathBuf], output: &Path) -> anyhow::Result<Comparison> {
    let runs: Vec<(String, PathBuf)> = dirs
        .iter()
        .map(|d| (d.display().to_string(), d.clone()))
        .collect();
    compare_labeled(&runs, output)
}

/// Reads the runs, each a label and its report directory, and writes their matrix to `output`.
pub fn compare_labeled(runs: &[(String, PathBuf)], output: &Path) -> anyhow::Result<Comparison> {
    anyhow::ensure!(
        !runs.is_empty(),
        "compare needs at least one report directory"
    );
    let out_dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let out_dir = out_dir
        .canonicalize()
        .with_context(|| format!("resolving {}", out_dir.display()))?;
    let mut columns = Vec::new();
    for (label, dir) in runs {
        let results = RunResults::read(dir)?;
        let absolute = dir
            .canonicalize()
            .with_context(|| format!("resolving {}", dir.display()))?;
        columns.push(Column {
            label: label.clone(),
            dir: slashed(&relative(&out_dir, &absolute)),
            results,
        });
    }
    let (html, comparison) = render(&columns);
    std::fs::write(output, html).with_context(|| format!("writing {}", output.display()))?;
    Ok(comparison)
}

type Row<'a> = Vec<Option<&'a ScenarioResult>>;

/// The rows, by feature and scenario, with each run's result.
fn rows(columns: &[Column]) -> BTreeMap<(&str, &str), Row<'_>> {
    let mut rows: BTreeMap<(&str, &str), Row<'_>> = BTreeMap::new();
    for (i, column) in columns.iter().enumerate() {
        for s in &column.results.scenarios {
            rows.entry((s.feature.as_str(), s.scenario.as_str()))
                .or_insert_with(|| vec![None; columns.len()])[i] = Some(s);
        }
    }
    rows
}

/// The runs that have the scenario disagree on its outcome (a run without it, filtered or
/// older, says nothing).
fn differs(row: &Row<'_>) -> bool {
    row.iter()
        .flatten()
        .map(|s| s.status)
        .collect::<BTreeSet<Status>>()
        .len()
        > 1
}

pub fn render(columns: &[Column]) -> (String, Comparison) {
    let rows = rows(columns);
    let differing = rows.values().filter(|r| differs(r)).count();
    let body = html! {
        h1 { "Conformance matrix" }
        p {
            (rows.len()) " scenarios × " (columns.len()) " runs; " (differing)
            " differ between runs (marked ≠)."
        }
        table.matrix {
            tr {
                th {}
                th { "Feature" }
                th { "Scenario" }
                @for c in columns {
                    th {
                        a href={ (href(&c.dir)) "/index.html" } { (c.label) }
                        br;
                        small { (c.results.context) br; (c.results.closing_line) }
                    }
                }
            }
            @for ((feature, scenario), row) in &rows {
                @let differs = differs(row);
                tr class=(if differs { "differs" } else { "same" }) {
                    td { @if differs { "≠" } }
                    td { (feature) }
                    td { (scenario) }
                    @for (column, cell) in columns.iter().zip(row) {
                        (cell_html(column, *cell))
                    }
                }
            }
        }
        @if differing > 0 {
            h2 { "Differences" }
            ul.differences {
                @for ((feature, scenario), row) in rows.iter().filter(|(_, row)| differs(row)) {
                    li {
                        (feature) ": " (scenario)
                        ul {
                            @for (column, s) in columns.iter().zip(row) {
                                @if let Some(s) = s {
                                    (difference_item(column, s))
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    (
        page("Conformance matrix", body),
        Comparison {
            scenarios: rows.len(),
            runs: columns.len(),
            differing,
            differences: differences(columns, &rows),
        },
    )
}

/// How a differing scenario went in one run, linked to its page there, and why.
fn difference_item(column: &Column, s: &ScenarioResult) -> Markup {
    let status = s.status.as_str();
    html! {
        li {
            (column.label) ": "
            @match &s.page {
                Some(p) => a href=(link(column, p)) { (status) },
                None => (status),
            }
            @match (s.status, &s.reason) {
                (Status::Passed, _) | (_, None) => {},
                (_, Some(r)) => { ": " (r) },
            }
        }
    }
}

/// A line per differing scenario: where it passed, and where not. Passes, and skips for the
/// same reason, are grouped; each failure names its page and its first line.
fn differences(columns: &[Column], rows: &BTreeMap<(&str, &str), Row<'_>>) -> Vec<String> {
    rows.iter()
        .filter(|(_, row)| differs(row))
        .map(|((feature, scenario), row)| {
            // Each group: its outcome, the runs it has, and what follows their names.
            let mut groups: Vec<(Status, Vec<&str>, String)> = Vec::new();
            for (column, cell) in columns.iter().zip(row) {
                let Some(s) = cell else { continue };
                let reason = s.reason.as_deref().unwrap_or_default();
                let tail = match (s.status, &s.page) {
                    (Status::Passed, _) => String::new(),
                    (Status::Skipped, _) | (_, None) => format!(" ({reason})"),
                    (_, Some(page)) => format!(" ({}/{page}: {reason})", column.dir),
                };
                let groups_with_others = matches!(s.status, Status::Passed | Status::Skipped);
                match groups
                    .iter_mut()
                    .find(|(status, _, t)| groups_with_others && *status == s.status && *t == tail)
                {
                    Some((_, runs, _)) => runs.push(&column.label),
                    None => groups.push((s.status, vec![&column.label], tail)),
                }
            }
            let parts: Vec<String> = groups
                .iter()
                .map(|(status, runs, tail)| {
                    format!("{} on {}{tail}", status.as_str(), runs.join(", "))
                })
                .collect();
            format!("≠ {feature}: {scenario}: {}", parts.join("; "))
        })
        .collect()
}

/// A page of `column`'s run, from the matrix.
fn link(column: &Column, page: &str) -> String {
    format!("{}/{}", href(&column.dir), href(page))
}

fn cell_html(column: &Column, cell: Option<&ScenarioResult>) -> Markup {
    let Some(s) = cell else {
        return html! { td.absent { "—" } };
    };
    let status = s.status.as_str();
    html! {
        td class=(status) title=[s.reason.as_deref()] {
            @match &s.page {
                Some(p) => a href=(link(column, p)) { (status) },
                None => (status),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_relative() {
        let cases = [
            ("/a/b", "/a/b/run", "run"),
            ("/a/b", "/a/c/run", "../c/run"),
            ("/a/b", "/a/b", "."),
            ("/", "/x/y", "x/y"),
            ("/a/b/c", "/d", "../../../d"),
        ];
        for (from, to, want) in cases {
            assert_eq!(
                relative(Path::new(from), Path::new(to)),
                PathBuf::from(want),
                "{from} → {to}"
            );
        }
    }

    fn result(scenario: &str, status: Status) -> ScenarioResult {
        ScenarioResult {
            feature: "Phases".into(),
            scenario: scenario.into(),
            status,
            seconds: 1.0,
            page: (status != Status::Skipped).then(|| format!("scenarios/{scenario}/index.html")),
            reason: (status == Status::Skipped).then(|| "@extension".to_string()),
            failure: None,
            behaviours: Vec::new(),
            slowest_stand_probe_ms: None,
        }
    }

    fn column(dir: &str, scenarios: Vec<ScenarioResult>) -> Column {
        Column {
            label: dir.into(),
            dir: dir.into(),
            results: RunResults {
                format: super::super::results::FORMAT,
                context: "embedded".into(),
                closing_line: "1 passed, 0 failed".into(),
                seconds: 1.0,
                scenarios,
            },
        }
    }

    #[test]
    fn the_matrix_marks_runs_that_disagree() {
        let columns = [
            column(
                "run a",
                vec![result("s1", Status::Passed), result("s2", Status::Passed)],
            ),
            column(
                "b",
                vec![result("s1", Status::Passed), result("s2", Status::Skipped)],
            ),
            column("c", vec![result("s3", Status::Failed)]),
        ];
        let differences = |columns: &[Column]| render(columns).1.differences;
        let (html, comparison) = render(&columns);
        assert_eq!(
            comparison,
            Comparison {
                scenarios: 3,
                runs: 3,
                differing: 1,
                differences: vec![
                    "≠ Phases: s2: passed on run a; skipped on b (@extension)".to_string()
                ],
            }
        );
        assert!(html.contains("<h2>Differences</h2>"));
        assert!(html.contains("<a href=\"run%20a/scenarios/s1/index.html\">passed</a>"));
        assert!(html.contains("<td class=\"skipped\" title=\"@extension\">skipped</td>"));
        assert_eq!(html.matches("<tr class=\"differs\">").count(), 1);
        assert_eq!(html.matches("<td class=\"absent\">").count(), 4);

        let mut failed = result("s2", Status::Failed);
        failed.reason = Some("expected phase Running".into());
        let more = [
            columns[0].clone(),
            columns[1].clone(),
            column("c", vec![result("s2", Status::Skipped)]),
            column("d", vec![failed.clone()]),
            column("e", vec![result("s2", Status::Passed)]),
            column("f", vec![failed]),
        ];
        assert_eq!(
            differences(&more),
            [
                "≠ Phases: s2: passed on run a, e; skipped on b, c (@extension); failed on d \
                 (d/scenarios/s2/index.html: expected phase Running); failed on f \
                 (f/scenarios/s2/index.html: expected phase Running)"
            ]
        );
    }
}
