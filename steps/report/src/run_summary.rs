//! What a run reports back: counts, coverage, the slowest and skipped scenarios.

use std::path::PathBuf;
use std::time::Duration;

/// The result of a run.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    /// Passed only on a retry; counted apart from `passed`.
    pub flaky: usize,
    /// How many times a failed scenario could run again (`--retries`).
    pub retries: usize,
    /// Scenarios the tags and name filters left out.
    pub not_selected: usize,
    pub duration: Duration,
    /// Phase-diagram edges the monitor saw taken, out of all edges.
    pub transitions_covered: usize,
    pub transitions_total: usize,
    /// Where the invariant monitor read the AppWrappers' states, and how many changes it
    /// could not check (each also failed its scenario).
    pub monitor: String,
    /// (feature: scenario, seconds), slowest first.
    pub slowest: Vec<(String, f64)>,
    /// Where the run's time went, as printed (the steps' `report::time_spent`).
    pub time_spent: Vec<String>,
    pub failed_scenarios: Vec<String>,
    /// (feature: scenario, the attempt it passed on).
    pub flaky_scenarios: Vec<(String, usize)>,
    /// Scenarios not run for this controller: (feature: scenario, reason).
    pub excluded: Vec<(String, String)>,
    pub report_dir: PathBuf,
}

impl Summary {
    pub fn success(&self) -> bool {
        self.failed == 0 && self.passed + self.flaky > 0
    }

    /// The closing line CI reads: `N passed, N failed`, then `, N flaky` when retries were
    /// allowed, `, N skipped` when scenarios were excluded for the controller under test and
    /// `, N not selected` when the tags or name filters left some out.
    pub fn closing_line(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed, self.failed);
        if self.retries > 0 || self.flaky > 0 {
            line.push_str(&format!(", {} flaky", self.flaky));
        }
        if !self.excluded.is_empty() {
            line.push_str(&format!(", {} skipped", self.excluded.len()));
        }
        if self.not_selected > 0 {
            line.push_str(&format!(", {} not selected", self.not_selected));
        }
        line
    }

    /// What a run prints at its end; the closing line comes last.
    pub fn report_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "phase-diagram transitions taken: {} of {}",
            self.transitions_covered, self.transitions_total
        )];
        if !self.monitor.is_empty() {
            lines.push(format!("invariant monitor: {}", self.monitor));
        }
        lines.extend(
            self.slowest
                .iter()
                .take(3)
                .map(|(name, secs)| format!("slow: {secs:.1}s {name}")),
        );
        lines.extend(self.time_spent.iter().cloned());
        lines.extend(
            self.excluded
                .iter()
                .map(|(name, reason)| format!("skipped: {name} ({reason})")),
        );
        lines.extend(
            self.flaky_scenarios
                .iter()
                .map(|(name, attempt)| format!("flaky: {name} (passed on attempt {attempt})")),
        );
        lines.extend(
            self.failed_scenarios
                .iter()
                .map(|name| format!("failed: {name}")),
        );
        lines.push(format!(
            "reports in {} ({:.0}s)",
            self.report_dir.display(),
            self.duration.as_secs_f64()
        ));
        if self.passed + self.failed + self.flaky == 0 {
            // A gate that checked nothing does not pass.
            lines.push(if self.excluded.is_empty() {
                "no scenario matched the filter".to_string()
            } else {
                "no scenario ran: each one selected was skipped, for the reason given above"
                    .to_string()
            });
        }
        lines.push(self.closing_line());
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_line_counts_scenarios() {
        let summary = Summary {
            passed: 3,
            failed: 1,
            ..Summary::default()
        };
        assert_eq!(summary.closing_line(), "3 passed, 1 failed");
        assert!(!summary.success());
        let skipped = Summary {
            passed: 3,
            excluded: vec![("f: s".into(), "@extension: ...".into())],
            ..Summary::default()
        };
        assert_eq!(skipped.closing_line(), "3 passed, 0 failed, 1 skipped");
        let filtered = Summary {
            passed: 3,
            not_selected: 5,
            ..skipped.clone()
        };
        assert_eq!(
            filtered.closing_line(),
            "3 passed, 0 failed, 1 skipped, 5 not selected"
        );
        let retried = Summary {
            passed: 3,
            flaky: 1,
            retries: 2,
            flaky_scenarios: vec![("f: s".into(), 2)],
            ..Summary::default()
        };
        assert_eq!(retried.closing_line(), "3 passed, 0 failed, 1 flaky");
        assert!(retried.success());
        assert!(
            retried
                .report_lines()
                .contains(&"flaky: f: s (passed on attempt 2)".to_string())
        );
        let allowed = Summary {
            passed: 3,
            retries: 1,
            ..Summary::default()
        };
        assert_eq!(allowed.closing_line(), "3 passed, 0 failed, 0 flaky");
        let only_flaky = Summary {
            flaky: 1,
            retries: 1,
            ..Summary::default()
        };
        assert!(only_flaky.success());
        assert!(
            skipped
                .report_lines()
                .iter()
                .any(|l| l.starts_with("skipped: f: s ("))
        );
    }
}
