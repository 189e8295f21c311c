//! The report in a real browser: two runs rendered from synthetic records (no cluster), their
//! conformance matrix, and headless Chromium opening the index, a scenario page, the
//! specification page and the matrix from disk with the network cut off. The pages' DOM must hold what a reviewer looks
//! for; a screenshot of the scenario page is kept as `timeline.png` beside the first report
//! (under the target directory's `tmp/report-browser/`).

use std::path::Path;
use std::time::{Duration, Instant};

use appwrapper_controller::api::Phase;
use chrono::{DateTime, TimeDelta, Utc};
use conformance_steps::Summary;
use conformance_steps::monitor::EdgeCoverage;
use conformance_steps::monitor::history::{AppWrapperHistory, ConditionState, Observation};
use conformance_steps::report::events::EventRecord;
use conformance_steps::report::gherkin::ScenarioText;
use conformance_steps::report::recorder::{ScenarioRun, StepOutcome, StepRun};
use conformance_steps::report::{self, Report, ScenarioRecord, Skipped, compare};
use cucumber::gherkin::Feature;

mod browser;
use browser::{browse, chromium, dom};

const FEATURE: &str = r#"
Feature: Phases
  Background:
    Given the suite's queues

  @behaviour:PH-SUCCEEDED
  Scenario: Running → Succeeded when every pod succeeds
    Given an AppWrapper "job" wrapping a Job with 1 pod
    And it has the annotations:
      | retryLimit | 1 |
    When it is submitted to the LocalQueue
    Then it reaches phase Succeeded within 60 seconds

  @behaviour:PH-SUSPEND
  Scenario: Suspending releases the quota
    Given an AppWrapper "sus" wrapping a Pod
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When Kueue suspends it
    Then it matches:
      """
      status:
        phase: Suspended
      """

  @gpu @behaviour:FT-AUTOPILOT-RESET
  Scenario: A GPU node fails
    Given an AppWrapper "gpu" wrapping a Pod
"#;

fn assert_holds(what: &str, dom: &str, expected: &[&str]) {
    for want in expected {
        assert!(
            dom.contains(want),
            "{what}: {want:?} is missing from its DOM:\n{dom}"
        );
    }
}

fn at(origin: DateTime<Utc>, ms: i64) -> DateTime<Utc> {
    origin + TimeDelta::milliseconds(ms)
}

fn observation(at: DateTime<Utc>, phase: Phase, conditions: &[(&str, &str, &str)]) -> Observation {
    Observation {
        at,
        phase,
        deleting: false,
        gone: false,
        resetting_count: 0,
        conditions: conditions
            .iter()
            .map(|(kind, status, reason)| ConditionState {
                kind: kind.to_string(),
                status: status.to_string(),
                reason: reason.to_string(),
                message: format!("{kind} is {status}"),
            })
            .collect(),
    }
}

fn step_runs(text: &ScenarioText, t0: DateTime<Utc>, fail_last: bool) -> Vec<StepRun> {
    let count = text.steps.len();
    text.steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let failed = fail_last && i + 1 == count;
            StepRun {
                line: step.line,
                background: step.background,
                started: at(t0, i as i64 * 2500),
                finished: Some(at(t0, i as i64 * 2500 + 2000)),
                outcome: Some(if failed {
                    StepOutcome::Failed
                } else {
                    StepOutcome::Passed
                }),
                error: failed.then(|| "phase is Running, not Suspended".to_string()),
            }
        })
        .collect()
}

fn run(dir: &Path, second_fails: bool) -> Duration {
    let feature = Feature::parse(FEATURE, Default::default()).unwrap();
    let texts: Vec<ScenarioText> = feature
        .scenarios
        .iter()
        .map(|s| ScenarioText::of(&feature, None, s))
        .collect();
    let t0 = DateTime::parse_from_rfc3339("2026-03-01T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc);
    let created = at(t0, 2000);
    let job = AppWrapperHistory {
        namespace: "aw-r1-1-running-succeeded".into(),
        name: "job".into(),
        uid: "u1".into(),
        created: Some(created),
        observations: vec![
            observation(at(created, 50), Phase::Empty, &[]),
            observation(
                at(created, 300),
                Phase::Suspended,
                &[("QuotaReserved", "False", "Pending")],
            ),
            observation(
                at(created, 1800),
                Phase::Resuming,
                &[
                    ("QuotaReserved", "True", "Admitted"),
                    ("ResourcesDeployed", "True", "Resuming"),
                ],
            ),
            observation(
                at(created, 2600),
                Phase::Running,
                &[
                    ("QuotaReserved", "True", "Admitted"),
                    ("ResourcesDeployed", "True", "Resuming"),
                    ("PodsReady", "True", "PodsReady"),
                ],
            ),
            observation(
                at(created, 9000),
                Phase::Succeeded,
                &[
                    ("QuotaReserved", "False", "Succeeded"),
                    ("ResourcesDeployed", "True", "Resuming"),
                    ("PodsReady", "False", "PodsCompleted"),
                ],
            ),
        ],
        dropped: 0,
        last_deployed: None,
    };
    let event = |reason: &str, ms: i64, source: &str| EventRecord {
        kind: "AppWrapper".into(),
        name: "job".into(),
        type_: "Normal".into(),
        reason: reason.into(),
        message: format!("{reason} happened"),
        source: source.into(),
        first: Some(at(created, ms)),
        last: Some(at(created, ms)),
        count: 1,
    };
    let first = ScenarioRecord {
        feature: "Phases".into(),
        scenario: texts[0].name.clone(),
        namespace: job.namespace.clone(),
        passed: true,
        seconds: 14.0,
        transitions: vec![
            "job: Empty → Suspended".into(),
            "job: Suspended → Resuming".into(),
            "job: Resuming → Running".into(),
            "job: Running → Succeeded".into(),
        ],
        text: texts[0].clone(),
        run: ScenarioRun {
            started: Some(t0),
            finished: Some(at(t0, 14_000)),
            steps: step_runs(&texts[0], t0, false),
            retries: 0,
        },
        appwrappers: vec![job],
        events: vec![
            event("CreatedWorkload", 200, "kueue-admission"),
            event("Started", 1700, "kueue-admission"),
            event("Running", 2700, "appwrapper-controller"),
            event("Succeeded", 9100, "appwrapper-controller"),
        ],
        finished_at: Some(at(t0, 14_000)),
        ..ScenarioRecord::default()
    };
    let namespace = "aw-r1-2-suspending".to_string();
    let artifacts = dir.join("scenarios").join(&namespace);
    if second_fails {
        std::fs::create_dir_all(artifacts.join("logs")).unwrap();
        std::fs::write(artifacts.join("failure.txt"), "the failure\n").unwrap();
        std::fs::write(artifacts.join("logs/controller.log"), "a line\n").unwrap();
    }
    let second = ScenarioRecord {
        feature: "Phases".into(),
        scenario: texts[1].name.clone(),
        namespace,
        passed: !second_fails,
        failure: second_fails.then(|| "phase is Running, not Suspended".to_string()),
        seconds: 12.5,
        artifacts: second_fails.then_some(artifacts),
        text: texts[1].clone(),
        run: ScenarioRun {
            started: Some(t0),
            finished: Some(at(t0, 12_500)),
            steps: step_runs(&texts[1], t0, second_fails),
            retries: 0,
        },
        ..ScenarioRecord::default()
    };
    let records = vec![first, second];
    let skipped = vec![Skipped {
        feature: "Phases".into(),
        scenario: texts[2].name.clone(),
        reason: "@gpu: needs nodes that advertise nvidia.com/gpu".into(),
        text: texts[2].clone(),
    }];
    let coverage: Vec<EdgeCoverage> = conformance_steps::monitor::graph::EDGES
        .iter()
        .map(|&(from, to)| {
            let taken = matches!(
                (from, to),
                (Phase::Empty, Phase::Suspended)
                    | (Phase::Suspended, Phase::Resuming)
                    | (Phase::Resuming, Phase::Running)
                    | (Phase::Running, Phase::Succeeded)
            );
            EdgeCoverage {
                from,
                to,
                direct: usize::from(taken),
                inferred: 0,
                namespaces: if taken {
                    [records[0].namespace.clone()].into()
                } else {
                    Default::default()
                },
                in_diagram: true,
            }
        })
        .collect();
    let summary = Summary {
        passed: if second_fails { 1 } else { 2 },
        failed: usize::from(second_fails),
        duration: Duration::from_secs(31),
        transitions_covered: 4,
        transitions_total: coverage.len(),
        excluded: vec![(skipped[0].title(), skipped[0].reason.clone())],
        report_dir: dir.to_path_buf(),
        ..Summary::default()
    };
    let started = Instant::now();
    report::write(
        dir,
        &Report {
            summary: &summary,
            records: &records,
            skipped: &skipped,
            coverage: &coverage,
            context: "controller under test: embedded; Kueue v0.19.2",
        },
    )
    .unwrap();
    started.elapsed()
}

/// Every page fetches nothing and runs nothing.
fn assert_self_contained(dir: &Path) {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let html = std::fs::read_to_string(&path).unwrap();
                let html = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
                for forbidden in ["<script", "http://", "https://", "@import", "<link", "<img"] {
                    assert!(
                        !html.contains(forbidden),
                        "{} contains {forbidden}",
                        path.display()
                    );
                }
            }
        }
    }
}

#[test]
fn the_report_reads_in_a_browser() {
    let chromium = chromium();
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    let _ = std::fs::remove_dir_all(&base);
    let (a, b) = (base.join("run-a"), base.join("run-b"));
    let rendered = run(&a, true);
    run(&b, false);
    eprintln!("report rendered in {} ms", rendered.as_millis());
    let matrix_page = base.join("matrix.html");
    let comparison = compare::compare(&[a.clone(), b.clone()], &matrix_page).unwrap();
    assert_eq!(
        (comparison.scenarios, comparison.runs, comparison.differing),
        (3, 2, 1)
    );
    assert_self_contained(&base);

    let index = dom(&chromium, &a.join("index.html"));
    assert_holds(
        "index",
        &index,
        &[
            "1 passed, 1 failed, 1 skipped",
            "<table class=\"features\">",
            "<td class=\"n passed\">1</td><td class=\"n failed\">1</td><td class=\"n\">0</td><td class=\"n skipped\">1</td>",
            "href=\"#edge-running-succeeded\"",
            "<li id=\"edge-running-succeeded\"><b>Running → Succeeded</b> seen 1 times",
            "<a href=\"scenarios/aw-r1-1-running-succeeded/index.html\">Phases: Running → Succeeded when every pod succeeds</a>",
            "<tr id=\"parameter-retrylimit\"><td>RetryLimit</td>",
            "workload.codeflare.dev.appwrapper/retryLimit",
            "@gpu: needs nodes that advertise nvidia.com/gpu",
        ],
    );

    let page = a.join("scenarios/aw-r1-1-running-succeeded/index.html");
    let scenario = dom(&chromium, &page);
    assert_holds(
        "scenario page",
        &scenario,
        &[
            "<span class=\"passed\">passed</span>",
            "class=\"step-passed\" id=\"step-1\"",
            "Background:",
            "<td>retryLimit</td>",
            "<svg class=\"timeline\"",
            "class=\"segment phase\"",
            "Succeeded",
            "class=\"segment condition\"",
            "QuotaReserved",
            "class=\"event\"",
            "CreatedWorkload",
            "class=\"step\"",
        ],
    );
    let failed = dom(
        &chromium,
        &a.join("scenarios/aw-r1-2-suspending/index.html"),
    );
    assert_holds(
        "failed scenario page",
        &failed,
        &[
            "<pre class=\"failure\">phase is Running, not Suspended</pre>",
            "class=\"step-failed\"",
            "<pre class=\"error\">",
            "<a href=\"failure.txt\">failure.txt</a>",
            "<a href=\"logs/controller.log\">",
            "<h3>Behaviours it broke</h3>",
            "<a href=\"../../specification.html#PH-SUSPEND\"><code>PH-SUSPEND</code></a>",
        ],
    );

    let specification = dom(&chromium, &a.join("specification.html"));
    assert_holds(
        "specification",
        &specification,
        &[
            "<a href=\"index.html\">Back to the run</a>",
            "<tr id=\"PH-SUCCEEDED\">",
            "<td class=\"passed\">held</td><td><ul class=\"scenarios\"><li><a href=\"scenarios/aw-r1-1-running-succeeded/index.html\">",
            "<td class=\"failed\">broken</td><td><ul class=\"scenarios\"><li><a href=\"scenarios/aw-r1-2-suspending/index.html\">",
            "<td class=\"skipped\">skipped</td><td><ul class=\"scenarios\"><li>Phases: A GPU node fails <span class=\"skipped\">skipped</span>: @gpu: needs nodes that advertise nvidia.com/gpu",
            "<td class=\"skipped\">not selected</td>",
            "<td class=\"skipped\">unchecked</td><td>the suite reads no metrics</td>",
            "<h2 id=\"unchecked\">",
            "<h2 id=\"single\">",
        ],
    );
    assert!(index.contains("<a href=\"specification.html\">Specification</a>"));

    let matrix = dom(&chromium, &matrix_page);
    assert_holds(
        "matrix",
        &matrix,
        &[
            "3 scenarios × 2 runs; 1 differ",
            "<tr class=\"differs\">",
            "<a href=\"run-a/scenarios/aw-r1-2-suspending/index.html\">failed</a>",
            "<a href=\"run-b/scenarios/aw-r1-2-suspending/index.html\">passed</a>",
            "title=\"@gpu: needs nodes that advertise nvidia.com/gpu\">skipped</td>",
        ],
    );

    let screenshot = a.join("timeline.png");
    browse(
        &chromium,
        &page,
        &[format!("--screenshot={}", screenshot.display())],
    );
    let png = std::fs::read(&screenshot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} is no screenshot ({} bytes)",
        screenshot.display(),
        png.len()
    );
    eprintln!("screenshot: {}", screenshot.display());
}
