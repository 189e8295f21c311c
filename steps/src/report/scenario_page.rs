//! The page of one scenario, `scenarios/<namespace>/index.html`: its Gherkin text with each
//! step's outcome, start and duration, its failure, a timeline of each of its AppWrappers,
//! the Events of its namespace, and links to its artifacts (kept beside the page).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use super::html::{escape, href, page};
use super::recorder::{StepOutcome, StepRun};
use super::timeline::{self, StepMark};
use super::{ScenarioRecord, Status};

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
fn earlier_attempts(r: &ScenarioRecord) -> String {
    if r.earlier.is_empty() {
        return String::new();
    }
    let mut html = String::from("<h3>Earlier attempts</h3>\n<ol class=\"attempts\">\n");
    for attempt in &r.earlier {
        let artifacts = if attempt.artifacts.is_some() {
            format!(
                " (<a href=\"../{}/\">artifacts</a>)",
                escape(&attempt.namespace)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            html,
            "<li>{:.1} s in namespace <code>{}</code>{artifacts}<pre class=\"failure\">{}</pre></li>",
            attempt.seconds,
            escape(&attempt.namespace),
            escape(&attempt.failure)
        );
    }
    html.push_str("</ol>\n");
    html
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
    let status = r.status();
    let mut body = String::new();
    let _ = writeln!(
        body,
        r#"<p><a href="../../index.html">← the run</a></p>
<h1>{}</h1>
<h2>{}: {} <span class="{}">{}</span></h2>"#,
        escape(&r.feature),
        escape(if r.text.keyword.is_empty() {
            "Scenario"
        } else {
            &r.text.keyword
        }),
        escape(&r.scenario),
        status.as_str(),
        status.as_str(),
    );
    let tags: Vec<String> = r.text.tags.iter().map(|t| format!("@{t}")).collect();
    let _ = writeln!(
        body,
        "<p>{:.1} s; namespace <code>{}</code>; {}:{}{}{}</p>",
        r.seconds,
        escape(&r.namespace),
        escape(&file_name(&r.text.key.file)),
        r.text.key.line,
        if tags.is_empty() {
            String::new()
        } else {
            format!("; <span class=\"tags\">{}</span>", escape(&tags.join(" ")))
        },
        match (r.earlier.len(), status) {
            (0, _) => String::new(),
            (n, Status::Failed) => format!("; failed all {} attempts", n + 1),
            (n, _) => format!("; passed on attempt {}", n + 1),
        }
    );
    if let Some(description) = &r.text.description {
        let _ = writeln!(body, "<p>{}</p>", escape(description));
    }
    if let Some(failure) = &r.failure {
        let _ = writeln!(
            body,
            "<h3>Failure</h3>\n<pre class=\"failure\">{}</pre>",
            escape(failure)
        );
    }
    body.push_str(&earlier_attempts(r));
    body.push_str(&steps(r));
    body.push_str(&timelines(r));
    body.push_str(&events(r));
    if !r.transitions.is_empty() {
        body.push_str("<h3>Phase changes the monitor saw</h3>\n<ul class=\"transitions\">\n");
        for t in &r.transitions {
            let _ = writeln!(body, "<li>{}</li>", escape(t));
        }
        body.push_str("</ul>\n");
    }
    if !artifacts.is_empty() {
        body.push_str("<h3>Artifacts</h3>\n<ul class=\"artifacts\">\n");
        for file in artifacts {
            let _ = writeln!(
                body,
                "<li><a href=\"{}\">{}</a></li>",
                href(file),
                escape(file)
            );
        }
        body.push_str("</ul>\n");
    }
    let title = format!("{} — {}", status.as_str(), r.title());
    page(&title, &body)
}

fn steps(r: &ScenarioRecord) -> String {
    let mut out = String::from("<h3>Steps</h3>\n<ol class=\"steps\">\n");
    let mut in_background = false;
    for (i, step) in r.text.steps.iter().enumerate() {
        if step.background != in_background {
            in_background = step.background;
            if in_background {
                out.push_str("<li class=\"section\"><span class=\"kw\">Background:</span></li>\n");
            }
        }
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
        let _ = write!(
            out,
            "<li class=\"{class}\" id=\"step-{n}\"><span class=\"no\">{n}</span><span class=\"kw\">{}</span> {} <span class=\"when\">{}</span>",
            escape(&step.keyword),
            escape(&step.text),
            escape(&when),
            n = i + 1,
        );
        if let Some(doc) = &step.docstring {
            let _ = write!(out, "<pre class=\"docstring\">{}</pre>", escape(doc));
        }
        if !step.table.is_empty() {
            out.push_str("<table class=\"data\">");
            for row in &step.table {
                out.push_str("<tr>");
                for cell in row {
                    let _ = write!(out, "<td>{}</td>", escape(cell));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
        }
        if let Some(error) = run.and_then(|run| run.error.as_ref()) {
            let _ = write!(out, "<pre class=\"error\">{}</pre>", escape(error));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");
    out
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

fn timelines(r: &ScenarioRecord) -> String {
    if r.appwrappers.is_empty() {
        return String::new();
    }
    let marks = step_marks(r);
    let mut out = String::from(
        "<h3>Timeline</h3>\n<p>What the invariant monitor observed of each AppWrapper, in seconds \
         since its creation, with the Events about it (◆) and the start of each step (its \
         number). Hover for details. Core Events carry whole seconds.</p>\n",
    );
    for aw in &r.appwrappers {
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
        let _ = writeln!(
            out,
            "<h4 id=\"appwrapper-{name}\">AppWrapper {name}</h4>\n<p>created {} (by the API server's clock, in whole seconds); {} states observed{}</p>",
            aw.created
                .map(|c| c.to_rfc3339())
                .unwrap_or_else(|| "(unknown)".into()),
            aw.observations.len(),
            if aw.dropped > 0 {
                format!(" ({} more in between not kept)", aw.dropped)
            } else {
                String::new()
            },
            name = escape(&aw.name),
        );
        out.push_str(&timeline::draw(aw, &marks, &about, end));
    }
    out
}

fn events(r: &ScenarioRecord) -> String {
    if r.events.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h3>Events</h3>\n<table class=\"events\"><tr><th>Time</th><th>Type</th><th>Reason</th><th>Object</th><th>Source</th><th>Message</th><th>Count</th></tr>\n",
    );
    for e in &r.events {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            e.first
                .map(|t| offset(r.run.started, t))
                .unwrap_or_default(),
            escape(&e.type_),
            escape(&e.reason),
            escape(&e.kind),
            escape(&e.name),
            escape(&e.source),
            escape(&e.message),
            e.count
        );
    }
    out.push_str("</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::gherkin::{ScenarioKey, ScenarioText, StepText};
    use crate::report::recorder::ScenarioRun;
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
            earlier: vec![crate::report::attempts::Attempt {
                namespace: "aw-1".into(),
                failure: "deadline <missed>".into(),
                seconds: 31.0,
                artifacts: Some("scenarios/aw-1".into()),
            }],
            ..ScenarioRecord::default()
        };
        let html = render(&record, &[]);
        for want in [
            "<span class=\"flaky\">flaky</span>",
            "; passed on attempt 2",
            "<h3>Earlier attempts</h3>",
            "31.0 s in namespace <code>aw-1</code> (<a href=\"../aw-1/\">artifacts</a>)",
            "<pre class=\"failure\">deadline &lt;missed&gt;</pre>",
        ] {
            assert!(html.contains(want), "{want} missing from\n{html}");
        }
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
