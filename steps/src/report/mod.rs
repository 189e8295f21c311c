//! Reports of a run, static files that work when opened from disk: `index.html` (features,
//! the phase diagram with the scenarios behind each edge, the parameters of the design and
//! the scenarios that test them, what was skipped), a page per scenario (its Gherkin text
//! with each step's outcome, a timeline of each of its AppWrappers, its artifacts), and
//! `results.json` for `awconf report compare` and `awconf report summary`, and `junit.xml`.
//! Cucumber JSON comes from cucumber's writer.

pub mod attempts;
pub mod events;
pub mod gherkin;
pub mod html;
pub mod index;
pub mod junit;
pub mod logs;
pub mod matrix;
pub mod parameters;
pub mod phase_diagram;
pub mod recorder;
pub mod results;
pub mod scenario_page;
pub mod specification;
pub mod summary;
pub mod time_spent;
pub mod timeline;

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::monitor::EdgeCoverage;
use crate::monitor::history::AppWrapperHistory;
use crate::options::Summary;
use events::EventRecord;
use gherkin::ScenarioText;
use recorder::ScenarioRun;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    /// Passed, but only on a retry.
    Flaky,
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Flaky => "flaky",
            Status::Skipped => "skipped",
        }
    }
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
    pub earlier: Vec<attempts::Attempt>,
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

/// Writes a page per scenario, `results.json`, `specification.html` and `index.html` into
/// `dir`; returns the path of the index.
pub fn write(dir: &Path, report: &Report<'_>) -> anyhow::Result<PathBuf> {
    for record in report.records {
        scenario_page::write(dir, record)?;
    }
    results::RunResults::of(report).write(dir)?;
    specification::write(dir, report)?;
    index::write(dir, report)
}
