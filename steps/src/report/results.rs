//! `results.json`: what a run's report directory says of each scenario, for machines
//! (`awconf report compare` reads it instead of the HTML).

use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::{Report, Status};

pub const FILE: &str = "results.json";
/// Raised when a field changes meaning; readers refuse a format they do not know.
pub const FORMAT: u32 = 1;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ScenarioResult {
    pub feature: String,
    pub scenario: String,
    pub status: Status,
    #[serde(default)]
    pub seconds: f64,
    /// Its page, relative to the report directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// Why it was skipped, or the first line of its failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RunResults {
    pub format: u32,
    /// The controller under test, Kueue's version, the concurrency.
    pub context: String,
    /// `N passed, N failed[, N skipped]`.
    pub closing_line: String,
    pub seconds: f64,
    pub scenarios: Vec<ScenarioResult>,
}

impl RunResults {
    pub fn of(report: &Report<'_>) -> RunResults {
        let ran = report.records.iter().map(|r| ScenarioResult {
            feature: r.feature.clone(),
            scenario: r.scenario.clone(),
            status: r.status(),
            seconds: r.seconds,
            page: Some(r.page()),
            reason: r
                .failure
                .as_deref()
                .and_then(|f| f.lines().find(|l| !l.trim().is_empty()))
                .map(str::to_string),
        });
        let skipped = report.skipped.iter().map(|s| ScenarioResult {
            feature: s.feature.clone(),
            scenario: s.scenario.clone(),
            status: Status::Skipped,
            seconds: 0.0,
            page: None,
            reason: Some(s.reason.clone()),
        });
        RunResults {
            format: FORMAT,
            context: report.context.to_string(),
            closing_line: report.summary.closing_line(),
            seconds: report.summary.duration.as_secs_f64(),
            scenarios: ran.chain(skipped).collect(),
        }
    }

    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let path = dir.join(FILE);
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))
    }

    pub fn read(dir: &Path) -> anyhow::Result<RunResults> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {} (is {} the report directory of an awconf run?)",
                path.display(),
                dir.display()
            )
        })?;
        let results: RunResults =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        anyhow::ensure!(
            results.format == FORMAT,
            "{} has format {}; this awconf reads format {FORMAT}",
            path.display(),
            results.format
        );
        Ok(results)
    }
}
