//! A scenario whose failure says nothing of the controller runs once more when the others are
//! done: one that failed while the machine was starved of CPU, or only for states the monitor
//! could not check (the stand's audit log wrote one out of order, say) while nothing it
//! checked was wrong, or because a window's step began after its window opened and found the
//! change already made, so that it could not tell whether the change came early. What a starved machine delays (the controller's reconcile, Kueue, the
//! API server, the harness's own set-up) is not what a scenario judges. A fault a scenario
//! exists for fails the second attempt as surely as the first, so it is still refused; a
//! scenario that passes only then is reported flaky, with why it ran again. Any other failure
//! on a machine that was not starved is a refusal and does not run again.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::report::ScenarioRecord;
use crate::report::gherkin::ScenarioKey;

/// A stand probe (one API read, beyond a short sleep) this slow means that the machine was
/// starved of CPU. On 2 cores our suite alone saw at most 328 ms (embedded) and 386 ms
/// (process); beside two other suites, failures came with probes of 701 ms to 5 s. The
/// reference's suite starves the machine by itself while it starts clusters of its own (992
/// ms), and a failure then is no more the controller's.
pub const STARVED: Duration = Duration::from_millis(500);

/// Why a scenario that failed would run again, if it would.
pub fn starved(slowest_stand_probe: Duration) -> Option<String> {
    (slowest_stand_probe >= STARVED).then(|| {
        format!(
            "it failed while the machine was starved of CPU (a stand probe took {} ms, {} ms \
             or more is starved)",
            slowest_stand_probe.as_millis(),
            STARVED.as_millis()
        )
    })
}

/// Why a failed attempt says nothing of the controller, if it does not.
pub fn inconclusive(record: &ScenarioRecord) -> Option<String> {
    record
        .inconclusive
        .clone()
        .or_else(|| starved(record.slowest_stand_probe))
}

/// The scenarios to run again, with why: those whose last attempt (of `records`, merged)
/// failed in a way that says nothing of the controller, unless `may_rerun` says that a
/// scenario cannot run twice in this run.
pub fn inconclusive_failures(
    records: &[ScenarioRecord],
    may_rerun: impl Fn(&ScenarioRecord) -> bool,
) -> BTreeMap<ScenarioKey, String> {
    records
        .iter()
        .filter(|r| !r.passed && may_rerun(r))
        .filter_map(|r| Some((r.text.key.clone(), inconclusive(r)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(line: usize) -> ScenarioKey {
        let file = "f.feature".to_string();
        ScenarioKey { file, line }
    }

    /// A scenario's last attempt at `line`, and its slowest stand probe in milliseconds.
    fn record(line: usize, passed: bool, probe_ms: u64) -> ScenarioRecord {
        let mut record = ScenarioRecord {
            passed,
            slowest_stand_probe: Duration::from_millis(probe_ms),
            ..ScenarioRecord::default()
        };
        record.text.key = key(line);
        record
    }

    #[test]
    fn only_failures_on_a_starved_machine_run_again() {
        // (line, passed, slowest stand probe in ms) → runs again
        let table = [
            (1, false, 2_400, true),
            (2, false, 500, true),
            (3, false, 499, false),
            (4, false, 0, false),
            (5, true, 5_000, false),
        ];
        let records: Vec<_> = table
            .iter()
            .map(|&(line, passed, ms, _)| record(line, passed, ms))
            .collect();
        let again = inconclusive_failures(&records, |_| true);
        for (line, _, ms, expected) in table {
            assert_eq!(
                again.contains_key(&key(line)),
                expected,
                "line {line}, {ms} ms"
            );
        }
        assert!(again.values().all(|why| why.contains("starved of CPU")));
    }

    #[test]
    fn an_inconclusive_failure_runs_again_on_a_quiet_machine() {
        let mut unchecked = record(1, false, 10);
        unchecked.inconclusive = Some("the monitor could not check".into());
        let records = [unchecked, record(2, false, 10)];
        let again = inconclusive_failures(&records, |_| true);
        assert_eq!(again.keys().map(|k| k.line).collect::<Vec<_>>(), vec![1]);
        assert!(again[&key(1)].contains("could not check"));
    }

    #[test]
    fn a_scenario_that_cannot_run_twice_does_not_run_again() {
        let records = [record(1, false, 3_000), record(2, false, 3_000)];
        let again = inconclusive_failures(&records, |r| r.text.key.line != 2);
        assert_eq!(
            again.keys().map(|k| k.line).collect::<Vec<_>>(),
            vec![1usize]
        );
    }
}
