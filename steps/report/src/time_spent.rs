//! Where a run's time went: set-up, the scenarios that bound the wall time, and what their
//! steps waited for. A scenario starts when a place frees (the concurrency limit) or when the
//! serial lock is released, so the wall time is bounded by a chain of scenarios, each started
//! as the one before it ended: walked back from the last one to end.

use chrono::{DateTime, Utc};

use crate::record::ScenarioRecord;

/// The scenarios of the chain a run names, first to last.
const NAMED: usize = 4;

/// A scenario counts as started by the end of another when it started this soon after.
const HANDOVER_SECONDS: f64 = 1.0;

/// What a step waits for, read from its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// A duration the specification sets: a window's lower bound (`between N and M seconds`)
    /// or a state held for a while (`stays Running for 10 seconds`).
    Specification,
    /// Until a state holds (`within N seconds`): as fast as the controller, the grace periods
    /// it waits out and the stand allow.
    Stand,
    /// An action or a read.
    Other,
}

impl Wait {
    pub fn of(step: &str) -> Wait {
        let holds = ["for ", "over ", "until "].iter().any(|p| {
            step.split(p).skip(1).any(|rest| {
                rest.split(' ')
                    .nth(1)
                    .is_some_and(|w| w.starts_with("second"))
            })
        });
        if step.contains(" between ") && step.contains(" seconds") || holds {
            Wait::Specification
        } else if step.contains(" within ") {
            Wait::Stand
        } else {
            Wait::Other
        }
    }
}

/// One scenario on the path.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub title: String,
    pub seconds: f64,
}

/// Seconds, over the scenarios on the path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Waits {
    pub specification: f64,
    pub stand: f64,
    /// Before the first step and after the last: a namespace, an own cluster, clean-up.
    pub hooks: f64,
    /// For the serial lock, a slot of the run's concurrency, or a place for an own controller
    /// or cluster.
    pub waiting: f64,
    pub other: f64,
    /// Between one scenario's end and the next one's start, and before the first.
    pub between: f64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeSpent {
    pub wall: f64,
    /// Until the first scenario could start: toolchain, cluster, Kueue, controller, probes.
    pub setup: f64,
    pub scenarios: f64,
    /// After the last scenario: the controller and cluster stopped, the report written.
    pub teardown: f64,
    /// First to last.
    pub path: Vec<Bound>,
    pub waits: Waits,
}

/// The moments a run passed: its start, its stand ready, its last scenario done, its end.
#[derive(Clone, Copy, Debug)]
pub struct Moments {
    pub started: DateTime<Utc>,
    pub ready: DateTime<Utc>,
    pub scenarios_done: DateTime<Utc>,
    pub ended: DateTime<Utc>,
}

fn seconds(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_milliseconds().max(0) as f64 / 1000.0
}

pub fn of(moments: Moments, records: &[ScenarioRecord]) -> TimeSpent {
    let ran: Vec<(&ScenarioRecord, DateTime<Utc>, DateTime<Utc>)> = records
        .iter()
        .filter_map(|r| Some((r, r.run.started?, r.run.finished?)))
        .collect();
    let mut path = Vec::new();
    let mut waits = Waits::default();
    let mut next = ran.iter().max_by_key(|(_, _, finished)| *finished);
    while let Some(&(record, started, finished)) = next {
        path.push(Bound {
            title: record.title(),
            seconds: seconds(started, finished),
        });
        add_waits(record, started, finished, &mut waits);
        next = ran
            .iter()
            .filter(|(r, _, end)| {
                !std::ptr::eq(*r, record)
                    && *end < finished
                    && ((*end - started).num_milliseconds() as f64 / 1000.0).abs()
                        <= HANDOVER_SECONDS
            })
            .max_by_key(|(_, _, end)| *end);
        match next {
            Some((_, _, end)) => waits.between += seconds(*end, started),
            None => waits.between += seconds(moments.ready, started),
        }
    }
    path.reverse();
    TimeSpent {
        wall: seconds(moments.started, moments.ended),
        setup: seconds(moments.started, moments.ready),
        scenarios: seconds(moments.ready, moments.scenarios_done),
        teardown: seconds(moments.scenarios_done, moments.ended),
        path,
        waits,
    }
}

fn add_waits(
    record: &ScenarioRecord,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
    waits: &mut Waits,
) {
    let mut in_steps = 0.0;
    for run in &record.run.steps {
        let Some(end) = run.finished else { continue };
        let spent = seconds(run.started, end);
        in_steps += spent;
        let text = record
            .text
            .steps
            .iter()
            .find(|s| s.line == run.line && s.background == run.background)
            .map(|s| s.text.as_str())
            .unwrap_or_default();
        match Wait::of(text) {
            Wait::Specification => waits.specification += spent,
            Wait::Stand => waits.stand += spent,
            Wait::Other => waits.other += spent,
        }
    }
    let waited = record.waited.min(seconds(started, finished));
    waits.waiting += waited;
    waits.hooks += (seconds(started, finished) - in_steps - waited).max(0.0);
}

impl TimeSpent {
    /// What a run prints at its end.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "time: {:.0}s = set-up {:.0}s + scenarios {:.0}s + teardown and report {:.0}s",
            self.wall, self.setup, self.scenarios, self.teardown
        )];
        if self.path.is_empty() {
            return lines;
        }
        let named: Vec<String> = self
            .path
            .iter()
            .take(NAMED)
            .map(|b| format!("{} ({:.0}s)", b.title, b.seconds))
            .collect();
        let more = match self.path.len().saturating_sub(named.len()) {
            0 => String::new(),
            n => format!(", then {n} more"),
        };
        lines.push(format!(
            "time: the scenarios bound it as a chain of {}, each started as the one before \
             ended: {}{more}",
            self.path.len(),
            named.join(", then ")
        ));
        let w = &self.waits;
        lines.push(format!(
            "time: on that chain {:.0}s in timing windows and holds the specification sets \
             (`between`, `stays ... for`, `stays ... until`), {:.0}s in steps that wait until \
             a state holds (`within`: the controller, its grace periods and the stand), {:.0}s \
             in other steps, {:.0}s in scenario set-up and clean-up, {:.0}s waiting for a \
             turn (the serial lock, a slot of the run's concurrency, a place for a controller or \
             cluster of its own), {:.0}s between scenarios",
            w.specification, w.stand, w.other, w.hooks, w.waiting, w.between
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gherkin::StepText;
    use crate::recorder::{ScenarioRun, StepRun};

    #[rstest::rstest]
    #[case(
        "it reaches phase Running between 30 and 45 seconds after it became Unhealthy",
        Wait::Specification
    )]
    #[case("it stays Running for 10 seconds", Wait::Specification)]
    #[case(
        "it stays Failed until 14 seconds after it paused deletion",
        Wait::Specification
    )]
    #[case(
        "the ClusterQueue has no admitted workload over 5 seconds",
        Wait::Specification
    )]
    #[case("it reaches phase Running within 60 seconds", Wait::Stand)]
    #[case("it reaches phase Failed within the detection period", Wait::Stand)]
    #[case("its pods fail with exit code 1", Wait::Other)]
    #[case("an AppWrapper \"a\" waiting for its pods", Wait::Other)]
    fn a_step_says_what_it_waits_for(#[case] step: &str, #[case] wait: Wait) {
        assert_eq!(Wait::of(step), wait);
    }

    fn at(second: f64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp_millis((second * 1000.0) as i64).unwrap()
    }

    /// A scenario from `start` to `end` with one step, `text`, from `start + 1` to `end - 1`.
    fn scenario(name: &str, start: f64, end: f64, text: &str) -> ScenarioRecord {
        let mut record = ScenarioRecord {
            feature: "F".into(),
            scenario: name.into(),
            ..ScenarioRecord::default()
        };
        record.text.steps.push(StepText {
            text: text.into(),
            line: 3,
            ..StepText::default()
        });
        record.run = ScenarioRun {
            started: Some(at(start)),
            finished: Some(at(end)),
            steps: vec![StepRun {
                line: 3,
                background: false,
                started: at(start + 1.0),
                finished: Some(at(end - 1.0)),
                outcome: None,
                error: None,
            }],
            retries: 0,
        };
        record
    }

    #[test]
    fn the_path_is_walked_back_from_the_last_to_end_through_handovers() {
        let records = [
            ScenarioRecord {
                waited: 1.5,
                ..scenario("a", 10.0, 40.0, "it stays Running for 10 seconds")
            },
            scenario(
                "b",
                10.0,
                20.0,
                "it reaches phase Running within 60 seconds",
            ),
            // Started as a ended: on the path.
            scenario(
                "c",
                40.5,
                90.0,
                "it reaches phase Running within 60 seconds",
            ),
            // Ended at the same time as c, earlier: not on the path.
            scenario("d", 20.2, 80.0, "it stays Running for 10 seconds"),
        ];
        let moments = Moments {
            started: at(0.0),
            ready: at(10.0),
            scenarios_done: at(90.0),
            ended: at(95.0),
        };
        let spent = of(moments, &records);
        let names: Vec<&str> = spent.path.iter().map(|b| b.title.as_str()).collect();
        assert_eq!(names, ["F: a", "F: c"]);
        assert_eq!(
            (spent.wall, spent.setup, spent.scenarios, spent.teardown),
            (95.0, 10.0, 80.0, 5.0)
        );
        assert_eq!(
            spent.waits,
            Waits {
                specification: 28.0,
                stand: 47.5,
                hooks: 2.5,
                waiting: 1.5,
                other: 0.0,
                between: 0.5,
            }
        );
        let lines = spent.lines();
        assert!(lines[1].contains("a chain of 2"), "{lines:?}");
        assert!(
            lines[1].ends_with("F: a (30s), then F: c (50s)"),
            "{lines:?}"
        );
        assert!(lines[2].contains("28s in timing windows"), "{lines:?}");
    }

    #[test]
    fn a_run_without_scenarios_says_only_its_phases() {
        let moments = Moments {
            started: at(0.0),
            ready: at(10.0),
            scenarios_done: at(10.0),
            ended: at(11.0),
        };
        assert_eq!(of(moments, &[]).lines().len(), 1);
    }
}
