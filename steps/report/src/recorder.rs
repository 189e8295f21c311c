//! When each step of each scenario started and finished, and how it went: a cucumber writer
//! teed beside the JUnit and JSON ones. Cucumber has no step hooks, but every event it hands
//! to its writers carries the time it happened, so the writer sees the steps as they ran.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use cucumber::event::{Cucumber, Feature, Rule, Scenario, Step};
use cucumber::{Event, Writer, cli, parser};

use super::gherkin::ScenarioKey;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    Passed,
    Failed,
    /// No step definition matched it, or it did not run because an earlier step failed.
    Skipped,
}

impl StepOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Passed => "passed",
            StepOutcome::Failed => "failed",
            StepOutcome::Skipped => "skipped",
        }
    }
}

/// One step as it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRun {
    pub line: usize,
    pub background: bool,
    pub started: DateTime<Utc>,
    /// `None` while it runs.
    pub finished: Option<DateTime<Utc>>,
    pub outcome: Option<StepOutcome>,
    pub error: Option<String>,
}

impl StepRun {
    pub fn seconds(&self) -> Option<f64> {
        self.finished
            .map(|f| (f - self.started).num_milliseconds() as f64 / 1000.0)
    }
}

/// How the steps of one scenario ran (its last attempt, when it was retried).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScenarioRun {
    pub started: Option<DateTime<Utc>>,
    pub finished: Option<DateTime<Utc>>,
    pub steps: Vec<StepRun>,
    /// Attempts before the last one.
    pub retries: usize,
}

impl ScenarioRun {
    pub fn step(&self, line: usize, background: bool) -> Option<&StepRun> {
        self.steps
            .iter()
            .find(|s| s.line == line && s.background == background)
    }
}

/// What happened to a scenario, as the recorder keeps it.
#[derive(Clone, Debug, PartialEq)]
pub enum Happening {
    ScenarioStarted,
    StepStarted {
        line: usize,
        background: bool,
    },
    StepDone {
        line: usize,
        background: bool,
        outcome: StepOutcome,
        error: Option<String>,
    },
    ScenarioFinished,
}

/// The runs of every scenario, by where it is written. Cheap to clone: clones share.
#[derive(Clone, Debug, Default)]
pub struct StepRecorder {
    runs: Arc<Mutex<HashMap<ScenarioKey, ScenarioRun>>>,
}

impl StepRecorder {
    fn runs(&self) -> MutexGuard<'_, HashMap<ScenarioKey, ScenarioRun>> {
        // Only whole updates are made under the lock: a poisoned one is still consistent.
        self.runs.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn note(&self, key: ScenarioKey, what: Happening, at: DateTime<Utc>) {
        let mut runs = self.runs();
        let run = runs.entry(key).or_default();
        match what {
            Happening::ScenarioStarted => {
                if run.started.is_some() {
                    *run = ScenarioRun {
                        retries: run.retries + 1,
                        ..ScenarioRun::default()
                    };
                }
                run.started = Some(at);
            }
            Happening::StepStarted { line, background } => run.steps.push(StepRun {
                line,
                background,
                started: at,
                finished: None,
                outcome: None,
                error: None,
            }),
            Happening::StepDone {
                line,
                background,
                outcome,
                error,
            } => {
                let started = run
                    .steps
                    .iter()
                    .rposition(|s| s.line == line && s.background == background);
                let step = match started {
                    Some(i) => &mut run.steps[i],
                    None => {
                        run.steps.push(StepRun {
                            line,
                            background,
                            started: at,
                            finished: None,
                            outcome: None,
                            error: None,
                        });
                        let last = run.steps.len() - 1;
                        &mut run.steps[last]
                    }
                };
                step.finished = Some(at);
                step.outcome = Some(outcome);
                step.error = error;
            }
            Happening::ScenarioFinished => run.finished = Some(at),
        }
    }

    /// Everything recorded so far; the recorder starts afresh.
    pub fn take(&self) -> HashMap<ScenarioKey, ScenarioRun> {
        std::mem::take(&mut *self.runs())
    }
}

/// What a cucumber scenario event means to the recorder.
fn happening<W>(event: &Scenario<W>) -> Option<Happening> {
    let step = |step: &cucumber::gherkin::Step, ev: &Step<W>, background: bool| {
        let line = step.position.line;
        Some(match ev {
            Step::Started => Happening::StepStarted { line, background },
            Step::Passed(..) => Happening::StepDone {
                line,
                background,
                outcome: StepOutcome::Passed,
                error: None,
            },
            Step::Skipped => Happening::StepDone {
                line,
                background,
                outcome: StepOutcome::Skipped,
                error: Some("no step definition matches it".into()),
            },
            Step::Failed(_, _, _, error) => Happening::StepDone {
                line,
                background,
                outcome: StepOutcome::Failed,
                error: Some(error.to_string()),
            },
        })
    };
    match event {
        Scenario::Started => Some(Happening::ScenarioStarted),
        Scenario::Finished => Some(Happening::ScenarioFinished),
        Scenario::Background(s, ev) => step(s, ev, true),
        Scenario::Step(s, ev) => step(s, ev, false),
        Scenario::Hook(..) | Scenario::Log(_) => None,
    }
}

impl<W> Writer<W> for StepRecorder {
    type Cli = cli::Empty;

    async fn handle_event(&mut self, event: parser::Result<Event<Cucumber<W>>>, _cli: &Self::Cli) {
        let Ok(event) = event else { return };
        let at = DateTime::<Utc>::from(event.at);
        let Cucumber::Feature(feature, feature_event) = &event.value else {
            return;
        };
        let (scenario, ev) = match feature_event {
            Feature::Scenario(s, ev) | Feature::Rule(_, Rule::Scenario(s, ev)) => (s, ev),
            _ => return,
        };
        if let Some(what) = happening(&ev.event) {
            self.note(ScenarioKey::of(feature, scenario), what, at);
        }
    }
}

// Marker traits `tee` and `normalized` ask for: the recorder neither reorders nor changes
// events.
impl cucumber::writer::NonTransforming for StepRecorder {}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;

    fn scenario_event<W>(
        feature: &cucumber::gherkin::Feature,
        scenario: &cucumber::gherkin::Scenario,
        event: Scenario<W>,
    ) -> Event<Cucumber<W>> {
        use cucumber::event::{RetryableScenario, Source};
        Event::new(Cucumber::scenario(
            Source::new(feature.clone()),
            None::<Source<cucumber::gherkin::Rule>>,
            Source::new(scenario.clone()),
            RetryableScenario {
                event,
                retries: None,
            },
        ))
    }

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::milliseconds(ms)
    }

    fn key() -> ScenarioKey {
        ScenarioKey {
            file: "f.feature".into(),
            line: 3,
        }
    }

    fn started(line: usize) -> Happening {
        Happening::StepStarted {
            line,
            background: false,
        }
    }

    fn done(line: usize, outcome: StepOutcome) -> Happening {
        Happening::StepDone {
            line,
            background: false,
            outcome,
            error: None,
        }
    }

    /// A step's line, seconds and outcome.
    type Timed = (usize, Option<f64>, Option<StepOutcome>);
    /// What the recorder is told and when (ms), what it makes of it, and the retries seen.
    type Case = (Vec<(Happening, i64)>, Vec<Timed>, usize);

    #[test]
    fn steps_are_timed_from_start_to_outcome() {
        let cases: Vec<Case> = vec![
            (
                vec![
                    (Happening::ScenarioStarted, 0),
                    (started(4), 10),
                    (done(4, StepOutcome::Passed), 1510),
                    (started(5), 1510),
                    (done(5, StepOutcome::Failed), 2000),
                ],
                vec![
                    (4, Some(1.5), Some(StepOutcome::Passed)),
                    (5, Some(0.49), Some(StepOutcome::Failed)),
                ],
                0,
            ),
            (
                vec![(Happening::ScenarioStarted, 0), (started(4), 10)],
                vec![(4, None, None)],
                0,
            ),
            (
                vec![(done(6, StepOutcome::Skipped), 5)],
                vec![(6, Some(0.0), Some(StepOutcome::Skipped))],
                0,
            ),
            (
                vec![
                    (Happening::ScenarioStarted, 0),
                    (started(4), 10),
                    (done(4, StepOutcome::Failed), 20),
                    (Happening::ScenarioStarted, 100),
                    (started(4), 110),
                    (done(4, StepOutcome::Passed), 120),
                ],
                vec![(4, Some(0.01), Some(StepOutcome::Passed))],
                1,
            ),
        ];
        for (happenings, want, retries) in cases {
            let recorder = StepRecorder::default();
            for (what, ms) in happenings.clone() {
                recorder.note(key(), what, at(ms));
            }
            let run = recorder.take().remove(&key()).unwrap();
            let got: Vec<Timed> = run
                .steps
                .iter()
                .map(|s| (s.line, s.seconds(), s.outcome))
                .collect();
            assert_eq!(got, want, "{happenings:?}");
            assert_eq!(run.retries, retries);
        }
    }

    #[test]
    fn the_writer_reads_cucumber_events() {
        let feature = cucumber::gherkin::Feature::parse(
            "Feature: F\n  Scenario: S\n    Given a step\n",
            Default::default(),
        )
        .unwrap();
        let scenario = &feature.scenarios[0];
        let step = cucumber::event::Source::new(scenario.steps[0].clone());
        let mut recorder = StepRecorder::default();
        let events: Vec<Scenario<()>> = vec![
            Scenario::Started,
            Scenario::Step(step.clone(), Step::Started),
            Scenario::Step(step, Step::Skipped),
            Scenario::Finished,
        ];
        futures::executor::block_on(async {
            for ev in events {
                let event = scenario_event(&feature, scenario, ev);
                Writer::<()>::handle_event(&mut recorder, Ok(event), &cli::Empty).await;
            }
        });
        let runs = recorder.take();
        let run = &runs[&ScenarioKey::of(&feature, scenario)];
        assert!(run.started.is_some() && run.finished.is_some());
        assert_eq!(
            run.step(3, false).unwrap().outcome,
            Some(StepOutcome::Skipped)
        );
    }
}
