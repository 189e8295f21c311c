//! `results.json`: what a run's report directory says of each scenario, for machines
//! (`awconf report compare` reads it instead of the HTML).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::record::Report;
use crate::status::Status;

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
    /// The whole failure message of a failed scenario (the mismatches, the diff, the object
    /// seen), as its page shows it. Added within format 1: a reader of an older file finds
    /// none and has `reason`, its first line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The behaviours of the specification it checks (its `@behaviour:` tags). Added within
    /// format 1: an older file names none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub behaviours: Vec<String>,
    /// Its last attempt's slowest stand probe, in milliseconds: how starved of CPU the
    /// machine was while it ran. Added within format 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest_stand_probe_ms: Option<u64>,
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
            failure: r.failure.clone(),
            behaviours: behaviours(&r.text.tags),
            slowest_stand_probe_ms: Some(r.slowest_stand_probe.as_millis() as u64),
        });
        let skipped = report.skipped.iter().map(|s| ScenarioResult {
            feature: s.feature.clone(),
            scenario: s.scenario.clone(),
            status: Status::Skipped,
            seconds: 0.0,
            page: None,
            reason: Some(s.reason.clone()),
            failure: None,
            behaviours: behaviours(&s.text.tags),
            slowest_stand_probe_ms: None,
        });
        RunResults {
            format: FORMAT,
            context: report.context.to_string(),
            closing_line: report.summary.closing_line(),
            seconds: report.summary.duration.as_secs_f64(),
            scenarios: ran.chain(skipped).collect(),
        }
    }

    /// Each behaviour that a failed scenario checks, with those scenarios, in id order.
    pub fn broken_behaviours(&self) -> BTreeMap<&str, Vec<&ScenarioResult>> {
        let mut broken: BTreeMap<&str, Vec<&ScenarioResult>> = BTreeMap::new();
        for s in self.scenarios.iter().filter(|s| s.status == Status::Failed) {
            for id in &s.behaviours {
                broken.entry(id.as_str()).or_default().push(s);
            }
        }
        broken
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

fn behaviours(tags: &[String]) -> Vec<String> {
    features::spec::behaviour_ids(tags)
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results.json from before `failure` was written still reads, without it; one with it
    /// reads back the same.
    #[test]
    fn the_failure_is_an_addition_older_files_do_without() {
        let older = r#"{"format": 1, "context": "c", "closing_line": "0 passed, 1 failed",
            "seconds": 1.0, "scenarios": [{"feature": "F", "scenario": "S", "status": "failed",
            "seconds": 2.0, "page": "scenarios/ns/index.html", "reason": "boom"}]}"#;
        let mut results: RunResults = serde_json::from_str(older).unwrap();
        assert_eq!(results.scenarios[0].reason.as_deref(), Some("boom"));
        assert_eq!(results.scenarios[0].failure, None);
        results.scenarios[0].failure = Some("boom\nmismatches:\n  - .a: expected 1".into());
        let dir = tempfile::tempdir().unwrap();
        results.write(dir.path()).unwrap();
        assert_eq!(RunResults::read(dir.path()).unwrap(), results);
        let text = std::fs::read_to_string(dir.path().join(FILE)).unwrap();
        assert!(text.contains(r#""failure": "boom\nmismatches:"#), "{text}");
    }
}
