//! The page of one scenario, `scenarios/<namespace>/index.html`: its Gherkin text with each
//! step's outcome, start and duration, its failure, the behaviours of the specification it
//! checks (or broke), a timeline of each of its AppWrappers, the Events of its namespace, and
//! links to its artifacts (kept beside the page).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use maud::{Markup, html};

use super::gherkin::StepText;
use super::html::{href, page, svg};
use super::recorder::{StepOutcome, StepRun};
use super::timeline::{self, StepMark};
use crate::record::ScenarioRecord;
use crate::status::Status;
use monitor::history::AppWrapperHistory;

pub const PAGE: &str = "index.html";

/// Writes the page into `<dir>/scenarios/<its directory>/`; returns its path.
pub fn write(dir: &Path, record: &ScenarioRecord) -> anyhow::Result<PathBuf> {
    let page_dir = dir.join("scenarios").join(record.dir_name());
    std::fs::create_dir_all(&page_dir)
        .with_context(|| format!("creating {}", page_dir.display()))?;
    let artifacts = files_under(&page_dir);
    let path = page_dir.join(PAGE);
    std::fs::write(&path, render(record, &artifacts))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The files in `dir` and its subdirectories but the page, as relative paths, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&relative)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = relative.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(path);
            } else if path != Path::new(PAGE) {
                files.push(path.to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    files
}

/// How a step went, as its class and its words: `None` when it did not run.
fn outcome_of(run: Option<&StepRun>) -> (&'static str, &'static str) {
    match run {
        None => ("step-skipped", "not run"),
        Some(StepRun { outcome: None, .. }) => ("step-failed", "did not finish"),
        Some(StepRun {
            outcome: Some(o), ..
        }) => match o {
            StepOutcome::Passed => ("step-passed", "passed"),
            StepOutcome::Failed => ("step-failed", "failed"),
            StepOutcome::Skipped => ("step-skipped", "skipped"),
        },
    }
}

/// The failed attempts before this one; each has its artifacts under its own namespace.
fn earlier_attempts(r: &ScenarioRecord) -> Markup {
    if r.earlier.is_empty() {
        return Markup::default();
    }
    html! {
        h3 { "Earlier attempts" }
        ol.attempts {
            @for attempt in &r.earlier {
                li {
                    (format!("{:.1}", attempt.seconds)) " s in namespace "
                    code { (attempt.namespace) }
                    @if attempt.artifacts.is_some() {
                        " (" a href={ "../" (attempt.namespace) "/" } { "artifacts" } ")"
                    }
                    @if let Some(why) = &attempt.rerun_because {
                        p { "Run again: " (why) }
                    }
                    pre.failure { (attempt.failure) }
                }
            }
        }
    }
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

fn offset(from: Option<DateTime<Utc>>, t: DateTime<Utc>) -> String {
    from.map(|f| format!("+{:.1}s", (t - f).num_milliseconds() as f64 / 1000.0))
        .unwrap_or_default()
}

pub fn render(r: &ScenarioRecord, artifacts: &[String]) -> String {
    let status = r.status().as_str();
    let keyword = match r.text.keyword.as_str() {
        "" => "Scenario",
        keyword => keyword,
    };
    let body = html! {
        p { a href="../../index.html" { "← the run" } }
        h1 { (r.feature) }
        h2 { (keyword) ": " (r.scenario) " " span class=(status) { (status) } }
        (about(r))
        @if let Some(description) = &r.text.description {
            p { (description) }
        }
        @if let Some(failure) = &r.failure {
            h3 { "Failure" }
            pre.failure { (failure) }
        }
        (behaviours(r))
        (earlier_attempts(r))
        (steps(r))
        (timelines(r))
        (events(r))
        @if !r.transitions.is_empty() {
            h3 { "Phase changes the monitor saw" }
            ul.transitions {
                @for t in &r.transitions {
                    li { (t) }
                }
            }
        }
        @if !artifacts.is_empty() {
            h3 { "Artifacts" }
            ul.artifacts {
                @for file in artifacts {
                    li { a href=(href(file)) { (file) } }
                }
            }
        }
    };
    page(&format!("{status} — {}", r.title()), body)
}

/// The behaviours of the specification it checks, each a link to its row of the Specification
/// page: those it broke, when it failed.
fn behaviours(r: &ScenarioRecord) -> Markup {
    let ids = features::spec::behaviour_ids(&r.text.tags);
    let heading = if r.status() == Status::Failed {
        "Behaviours it broke"
    } else {
        "Behaviours it checks"
    };
    html! {
        @if !ids.is_empty() {
            h3 { (heading) }
            ul.behaviours {
                @for id in ids {
                    @let statement = features::spec::built_in().find(id).map(|b| b.statement.as_str());
                    li {
                        a href={ "../../" (super::specification::FILE) "#" (id) } { code { (id) } }
                        @if let Some(statement) = statement { ": " (statement) }
                    }
                }
            }
        }
    }
}

/// Its duration, namespace, where it is written, its tags and its attempts.
fn about(r: &ScenarioRecord) -> Markup {
    let tags: Vec<String> = r.text.tags.iter().map(|t| format!("@{t}")).collect();
    let attempts = match (r.earlier.len(), r.status()) {
        (0, _) => String::new(),
        (n, Status::Failed) => format!("; failed all {} attempts", n + 1),
        (n, _) => format!("; passed on attempt {}", n + 1),
    };
    html! {
        p {
            (format!("{:.1}", r.seconds)) " s; namespace " code { (r.namespace) }
            "; " (file_name(&r.text.key.file)) ":" (r.text.key.line)
            @if !tags.is_empty() {
                "; " span.tags { (tags.join(" ")) }
            }
            (attempts)
        }
    }
}

fn steps(r: &ScenarioRecord) -> Markup {
    let steps = &r.text.steps;
    html! {
        h3 { "Steps" }
        ol.steps {
            @for (i, step) in steps.iter().enumerate() {
                @if step.background && (i == 0 || !steps[i - 1].background) {
                    li.section { span.kw { "Background:" } }
                }
                (step_item(r, i + 1, step))
            }
        }
    }
}

/// A step, numbered, with how it went, its docstring or table, and its error.
fn step_item(r: &ScenarioRecord, number: usize, step: &StepText) -> Markup {
    let run = r.run.step(step.line, step.background);
    let (class, words) = outcome_of(run);
    let when = match run {
        Some(run) => format!(
            "{} · {} · {words}",
            offset(r.run.started, run.started),
            run.seconds()
                .map(|s| format!("{s:.2}s"))
                .unwrap_or_else(|| "…".into())
        ),
        None => words.to_string(),
    };
    html! {
        li class=(class) id={ "step-" (number) } {
            span.no { (number) }
            span.kw { (step.keyword) }
            " " (step.text) " "
            span.when { (when) }
            @if let Some(doc) = &step.docstring {
                pre.docstring { (doc) }
            }
            @if !step.table.is_empty() {
                table.data {
                    @for row in &step.table {
                        tr {
                            @for cell in row {
                                td { (cell) }
                            }
                        }
                    }
                }
            }
            @if let Some(error) = run.and_then(|run| run.error.as_ref()) {
                pre.error { (error) }
            }
        }
    }
}

/// The step starts, numbered as on the page.
fn step_marks(r: &ScenarioRecord) -> Vec<StepMark> {
    r.text
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, step)| {
            let run = r.run.step(step.line, step.background)?;
            Some(StepMark {
                number: i + 1,
                at: run.started,
                text: format!("{} {}", step.keyword, step.text),
                outcome: run.outcome,
            })
        })
        .collect()
}

fn timelines(r: &ScenarioRecord) -> Markup {
    if r.appwrappers.is_empty() {
        return Markup::default();
    }
    let marks = step_marks(r);
    html! {
        h3 { "Timeline" }
        p {
            "What the invariant monitor observed of each AppWrapper, in seconds since its \
             creation, with the Events about it (◆) and the start of each step (its number). \
             Hover for details. Core Events carry whole seconds."
        }
        @for aw in &r.appwrappers {
            (timeline_of(r, aw, &marks))
        }
    }
}

fn timeline_of(r: &ScenarioRecord, aw: &AppWrapperHistory, marks: &[StepMark]) -> Markup {
    let last_seen = aw.observations.last().map(|o| o.at);
    let end = [r.finished_at, r.run.finished, last_seen]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or_else(Utc::now);
    let about: Vec<_> = r
        .events
        .iter()
        .filter(|e| e.is_about("AppWrapper", &aw.name))
        .collect();
    let created = aw
        .created
        .map(|c| c.to_rfc3339())
        .unwrap_or_else(|| "(unknown)".into());
    html! {
        h4 id={ "appwrapper-" (aw.name) } { "AppWrapper " (aw.name) }
        p {
            "created " (created) " (by the API server's clock, in whole seconds); "
            (aw.observations.len()) " states observed"
            @if aw.dropped > 0 {
                " (" (aw.dropped) " more in between not kept)"
            }
        }
        (svg(timeline::draw(aw, marks, &about, end)))
    }
}

fn events(r: &ScenarioRecord) -> Markup {
    if r.events.is_empty() {
        return Markup::default();
    }
    html! {
        h3 { "Events" }
        table.events {
            tr {
                @for heading in ["Time", "Type", "Reason", "Object", "Source", "Message", "Count"] {
                    th { (heading) }
                }
            }
            @for e in &r.events {
                tr {
                    td { (e.first.map(|t| offset(r.run.started, t)).unwrap_or_default()) }
                    td { (e.type_) }
                    td { (e.reason) }
                    td { (e.kind) "/" (e.name) }
                    td { (e.source) }
                    td { (e.message) }
                    td.n { (e.count) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gherkin::{ScenarioKey, ScenarioText, StepText};
    use crate::recorder::ScenarioRun;
    use chrono::TimeDelta;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::milliseconds(ms)
    }

    fn step(line: usize, keyword: &str, text: &str) -> StepText {
        StepText {
            keyword: keyword.into(),
            text: text.into(),
            line,
            ..StepText::default()
        }
    }

    fn ran(line: usize, from: i64, to: i64, outcome: StepOutcome) -> StepRun {
        StepRun {
            line,
            background: false,
            started: at(from),
            finished: Some(at(to)),
            outcome: Some(outcome),
            error: (outcome == StepOutcome::Failed).then(|| "boom <here>".to_string()),
        }
    }

    #[test]
    fn each_step_shows_how_it_went() {
        let record = ScenarioRecord {
            feature: "Phases".into(),
            scenario: "Running → Succeeded".into(),
            namespace: "aw-1".into(),
            failure: Some("boom <here>".into()),
            text: ScenarioText {
                key: ScenarioKey {
                    file: "phases.feature".into(),
                    line: 3,
                },
                keyword: "Scenario".into(),
                name: "Running → Succeeded".into(),
                tags: vec!["serial".into(), "behaviour:PH-SUCCEEDED".into()],
                steps: vec![
                    step(4, "Given", "an AppWrapper"),
                    step(5, "When", "it is submitted"),
                    step(6, "Then", "it succeeds"),
                ],
                ..ScenarioText::default()
            },
            run: ScenarioRun {
                started: Some(at(0)),
                steps: vec![
                    ran(4, 100, 350, StepOutcome::Passed),
                    ran(5, 400, 1400, StepOutcome::Failed),
                ],
                ..ScenarioRun::default()
            },
            ..ScenarioRecord::default()
        };
        let html = render(&record, &["failure.txt".into(), "logs/kueue.log".into()]);
        let expected = [
            "class=\"step-passed\" id=\"step-1\"",
            "+0.1s · 0.25s · passed",
            "class=\"step-failed\" id=\"step-2\"",
            "+0.4s · 1.00s · failed",
            "<pre class=\"error\">boom &lt;here&gt;</pre>",
            "class=\"step-skipped\" id=\"step-3\"",
            "not run",
            "<a href=\"logs/kueue.log\">",
            "<span class=\"failed\">failed</span>",
            "<h3>Behaviours it broke</h3>",
            "<li><a href=\"../../specification.html#PH-SUCCEEDED\"><code>PH-SUCCEEDED</code></a>: When the succeeded pods",
        ];
        for want in expected {
            assert!(html.contains(want), "{want} missing from\n{html}");
        }
    }

    #[test]
    fn a_flaky_scenario_shows_its_failed_attempts() {
        let record = ScenarioRecord {
            feature: "Phases".into(),
            scenario: "Running → Succeeded".into(),
            namespace: "aw-2".into(),
            passed: true,
            flaky: true,
            earlier: vec![crate::attempts::Attempt {
                namespace: "aw-1".into(),
                failure: "deadline <missed>".into(),
                seconds: 31.0,
                artifacts: Some("scenarios/aw-1".into()),
                rerun_because: Some("the machine was starved".into()),
            }],
            ..ScenarioRecord::default()
        };
        let html = render(&record, &[]);
        for want in [
            "<span class=\"flaky\">flaky</span>",
            "; passed on attempt 2",
            "Run again: the machine was starved",
            "<h3>Earlier attempts</h3>",
            "31.0 s in namespace <code>aw-1</code> (<a href=\"../aw-1/\">artifacts</a>)",
            "<pre class=\"failure\">deadline &lt;missed&gt;</pre>",
        ] {
            assert!(html.contains(want), "{want} missing from\n{html}");
        }
    }

    #[test]
    fn hostile_text_is_escaped() {
        use crate::html::hostile::{ESCAPED as SAFE, TEXT as HOSTILE, assert_escaped};
        let record = ScenarioRecord {
            feature: "F".into(),
            scenario: HOSTILE.into(),
            namespace: "aw-1".into(),
            failure: Some(format!("log line: {HOSTILE}")),
            transitions: vec![HOSTILE.into()],
            events: vec![crate::events::EventRecord {
                message: HOSTILE.into(),
                ..Default::default()
            }],
            text: ScenarioText {
                steps: vec![step(4, "Given", HOSTILE)],
                ..ScenarioText::default()
            },
            ..ScenarioRecord::default()
        };
        let html = render(&record, &[format!("logs/{HOSTILE}.log")]);
        assert_escaped(
            &html,
            &[
                format!("<title>failed — F: {SAFE}</title>"),
                format!("<h2>Scenario: {SAFE} <span"),
                format!("<pre class=\"failure\">log line: {SAFE}</pre>"),
                format!("<span class=\"kw\">Given</span> {SAFE} <span"),
                format!("<td>{SAFE}</td>"),
                format!("<li>{SAFE}</li>"),
                format!("<a href=\"logs/%3Cscript%3E%22%26%27.log\">logs/{SAFE}.log</a>"),
            ],
        );
    }

    #[test]
    fn artifacts_are_listed_but_not_the_page() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        for f in ["index.html", "failure.txt", "logs/controller.log"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        assert_eq!(
            files_under(dir.path()),
            vec!["failure.txt".to_string(), "logs/controller.log".to_string()]
        );
    }
}
