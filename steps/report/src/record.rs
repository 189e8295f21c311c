//! The neutral records a report is made of: how each scenario went, what was not run, and
//! the run around them. Filled in by the suite; nothing here knows of its World.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use monitor::EdgeCoverage;
use monitor::history::AppWrapperHistory;

use crate::events::EventRecord;
use crate::gherkin::ScenarioText;
use crate::html;
use crate::recorder::ScenarioRun;
use crate::run_summary::Summary;
use crate::status::Status;

/// A failed attempt before the last one.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attempt {
    pub namespace: String,
    pub failure: String,
    pub seconds: f64,
    pub artifacts: Option<PathBuf>,
    /// Why it ran again, when it was not for `--retries`.
    pub rerun_because: Option<String>,
}

/// How one scenario went.
#[derive(Clone, Debug, Default)]
pub struct ScenarioRecord {
    pub feature: String,
    pub scenario: String,
    pub namespace: String,
    pub passed: bool,
    /// It passed only on a retry.
    pub flaky: bool,
    /// The attempts that failed before this one, with `--retries`.
    pub earlier: Vec<Attempt>,
    pub failure: Option<String>,
    pub seconds: f64,
    /// Seconds it waited for the serial lock or a place for its own cluster before it began.
    pub waited: f64,
    /// Where its artifacts are, when it failed.
    pub artifacts: Option<PathBuf>,
    /// The phase changes the monitor saw in its namespace (`name: A → B`).
    pub transitions: Vec<String>,
    pub text: ScenarioText,
    /// How its steps ran; filled in from the [`recorder::StepRecorder`] when the run ends.
    pub run: ScenarioRun,
    /// What the monitor observed of each of its AppWrappers.
    pub appwrappers: Vec<AppWrapperHistory>,
    /// The Events of its namespace when it ended.
    pub events: Vec<EventRecord>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The slowest probe of the stand while it ran: how starved of CPU the machine was.
    pub slowest_stand_probe: std::time::Duration,
    /// Why its failure says nothing of the controller, when it does not: only states the
    /// monitor could not check failed it (`Violation::is_unchecked`), or a step could not judge
    /// what it checks, and nothing it checked was wrong.
    pub inconclusive: Option<String>,
}

impl ScenarioRecord {
    pub fn title(&self) -> String {
        format!("{}: {}", self.feature, self.scenario)
    }

    pub fn status(&self) -> Status {
        match (self.passed, self.flaky) {
            (false, _) => Status::Failed,
            (true, true) => Status::Flaky,
            (true, false) => Status::Passed,
        }
    }

    /// Its directory under `scenarios/`: its namespace, where its artifacts are too.
    pub fn dir_name(&self) -> String {
        if !self.namespace.is_empty() {
            return self.namespace.clone();
        }
        let file = Path::new(&self.text.key.file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.feature.clone());
        format!(
            "no-namespace-{}",
            html::anchor(&format!("{file} {} {}", self.text.key.line, self.scenario))
        )
    }

    /// Its page, relative to the report directory.
    pub fn page(&self) -> String {
        format!("scenarios/{}/index.html", self.dir_name())
    }
}

/// A scenario not run here, and why.
#[derive(Clone, Debug, Default)]
pub struct Skipped {
    pub feature: String,
    pub scenario: String,
    pub reason: String,
    pub text: ScenarioText,
}

impl Skipped {
    pub fn title(&self) -> String {
        format!("{}: {}", self.feature, self.scenario)
    }
}

/// Everything a report is made of.
pub struct Report<'a> {
    pub summary: &'a Summary,
    pub records: &'a [ScenarioRecord],
    pub skipped: &'a [Skipped],
    pub coverage: &'a [EdgeCoverage],
    /// The controller under test, Kueue's version, the concurrency.
    pub context: &'a str,
}
