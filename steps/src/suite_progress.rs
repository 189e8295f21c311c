//! The suite's progress while it runs: on a terminal, a bar of scenarios done of the total
//! with the failures so far and the longest-running scenario; in a log, one line per scenario
//! as it ends.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use clusters::progress::Counter;

use crate::report::ScenarioRecord;

pub struct SuiteProgress {
    counter: Counter,
    total: AtomicUsize,
    done: AtomicUsize,
    failed: AtomicUsize,
    running: Mutex<BTreeMap<String, Instant>>,
}

impl SuiteProgress {
    pub fn new(total: usize) -> Self {
        SuiteProgress {
            counter: Counter::start(total as u64, "scenarios"),
            total: AtomicUsize::new(total),
            done: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            running: Mutex::default(),
        }
    }

    /// `more` attempts to come beyond one per scenario: a retry, or the scenarios that run
    /// again at the end.
    pub fn add_to_total(&self, more: usize) {
        self.total.fetch_add(more, Ordering::Relaxed);
        self.counter.add_to_total(more as u64);
    }

    pub fn started(&self, title: &str) {
        if let Ok(mut running) = self.running.lock() {
            running.insert(title.to_string(), Instant::now());
        }
        self.refresh();
    }

    pub fn ended(&self, record: &ScenarioRecord) {
        let title = format!("{}: {}", record.feature, record.scenario);
        if let Ok(mut running) = self.running.lock() {
            running.remove(&title);
        }
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if !record.passed {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        let total = self.total.load(Ordering::Relaxed).max(done);
        self.counter.advance(&line(done, total, record));
        self.refresh();
    }

    pub fn finish(&self) {
        self.counter.finish();
    }

    fn refresh(&self) {
        let slowest = self.running.lock().ok().and_then(|running| {
            running
                .iter()
                .min_by_key(|(_, since)| **since)
                .map(|(title, since)| {
                    format!(
                        "; longest running: {title} ({}s)",
                        since.elapsed().as_secs()
                    )
                })
        });
        self.counter.set_message(format!(
            "{} failed{}",
            self.failed.load(Ordering::Relaxed),
            slowest.unwrap_or_default()
        ));
    }
}

/// `[ 12/111] passed  phases: Running → Succeeded (23.1s)`.
fn line(done: usize, total: usize, record: &ScenarioRecord) -> String {
    let width = total.to_string().len();
    let outcome = if record.passed { "passed" } else { "FAILED" };
    format!(
        "[{done:>width$}/{total}] {outcome}  {}: {} ({:.1}s)",
        record.feature, record.scenario, record.seconds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_how_far_the_run_is_and_how_the_scenario_went() {
        let record = ScenarioRecord {
            feature: "phases".into(),
            scenario: "Running → Succeeded".into(),
            passed: true,
            seconds: 23.06,
            ..ScenarioRecord::default()
        };
        assert_eq!(
            line(7, 111, &record),
            "[  7/111] passed  phases: Running → Succeeded (23.1s)"
        );
        let failed = ScenarioRecord {
            passed: false,
            ..record
        };
        assert!(line(12, 111, &failed).contains("] FAILED  phases"));

        let progress = SuiteProgress::new(2);
        progress.started("phases: Running → Succeeded");
        progress.ended(&failed);
        assert_eq!(progress.failed.load(Ordering::Relaxed), 1);
        assert!(progress.running.lock().unwrap().is_empty());
        progress.finish();
    }
}
