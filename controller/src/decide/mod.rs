//! The pure reconcile decision: `(status, observation, now, config) -> Decision` (spec §2).
//!
//! No I/O, no clock, no randomness. I/O results that the reference consumes in the middle of a
//! reconcile (the outcome of a create) come back through [`Observation::create_outcome`]: the
//! reconciler runs decide again with the outcome of the create it just executed.

pub mod confirm;
mod deletion;
pub mod reasons;
mod resetting;
mod resuming;
mod running;
pub mod summary;
mod suspension;
mod terminal;
mod types;

#[cfg(test)]
mod tests;

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use crate::annotations::FaultTolerance;
use crate::api::{AppWrapperStatus, CONTROLLER_NAME, Phase};
use crate::conditions::{self, CondStatus};
use crate::config::Config;
use reasons::{EXTERNALLY_SUSPENDED, SUSPENDING};

pub use types::*;

/// What the reconciler must do after one decision.
///
/// Act applies it in this order: [`Effect::AddFinalizer`] first (stop on error); then the status
/// patch if `status` differs from the status decide was given (stop on error unless
/// `ignore_status_error`); then [`Effect::CountPhase`]; then the other effects in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub status: AppWrapperStatus,
    pub effects: Vec<Effect>,
    pub requeue_after: Option<Duration>,
    /// End the reconcile with this error (controller backoff) once the effects are applied.
    pub error: Option<String>,
    /// Failures of this decision's status patch are logged and otherwise ignored.
    pub ignore_status_error: bool,
    /// Malformed annotations and other oddities to log.
    pub warnings: Vec<String>,
}

impl Decision {
    /// The phase this decision transitions to, if any.
    pub fn transition(&self) -> Option<Phase> {
        self.effects.iter().find_map(|e| match e {
            Effect::CountPhase(p) => Some(*p),
            _ => None,
        })
    }
}

pub const REQUEUE_CREATE_RETRY: Duration = Duration::from_secs(1);
pub const REQUEUE_READY: Duration = Duration::from_secs(60);
pub const REQUEUE_NOT_READY: Duration = Duration::from_secs(5);
pub const REQUEUE_DELETING: Duration = Duration::from_secs(5);

pub fn decide(
    status: &AppWrapperStatus,
    observation: &Observation,
    now: Timestamp,
    config: &Config,
) -> Decision {
    let (ft, warnings) =
        FaultTolerance::resolve(&observation.annotations, &config.appwrapper.fault_tolerance);
    let mut d = Decider {
        obs: observation,
        now,
        config,
        ft,
        status: status.clone(),
        effects: Vec::new(),
        requeue_after: None,
        error: None,
        ignore_status_error: false,
        warnings: warnings.iter().map(ToString::to_string).collect(),
    };
    d.run(status);
    Decision {
        status: d.status,
        effects: d.effects,
        requeue_after: d.requeue_after,
        error: d.error,
        ignore_status_error: d.ignore_status_error,
        warnings: d.warnings,
    }
}

/// Working state of one decision: a copy of the status that handlers mutate, and what to do.
struct Decider<'a> {
    obs: &'a Observation,
    now: Timestamp,
    config: &'a Config,
    ft: FaultTolerance,
    status: AppWrapperStatus,
    effects: Vec<Effect>,
    requeue_after: Option<Duration>,
    error: Option<String>,
    ignore_status_error: bool,
    warnings: Vec<String>,
}

impl Decider<'_> {
    fn run(&mut self, original: &AppWrapperStatus) {
        if self
            .obs
            .managed_by
            .as_deref()
            .is_some_and(|m| m != CONTROLLER_NAME)
        {
            return;
        }
        if self.obs.deletion_requested {
            self.handle_deletion(original);
            return;
        }
        match self.status.phase {
            Phase::Empty => self.handle_empty(),
            Phase::Suspended => self.handle_suspended(),
            Phase::Resuming => self.handle_resuming(),
            Phase::Running => self.handle_running(),
            Phase::Suspending => self.handle_suspending(),
            Phase::Resetting => self.handle_resetting(),
            Phase::Failed => self.handle_failed(),
            Phase::Succeeded => self.handle_succeeded(),
            Phase::Terminating | Phase::Unknown => {}
        }
    }

    fn set(&mut self, type_: &str, status: CondStatus, reason: &str, message: &str) {
        conditions::set(
            &mut self.status.conditions,
            type_,
            status,
            reason,
            message,
            self.now,
        );
    }

    fn clear(&mut self, type_: &str, reason: &str, message: &str) {
        conditions::clear(
            &mut self.status.conditions,
            type_,
            reason,
            message,
            self.now,
        );
    }

    fn is_true(&self, type_: &str) -> bool {
        conditions::is_true(&self.status.conditions, type_)
    }

    fn ltt(&self, type_: &str) -> Option<Timestamp> {
        conditions::transition_time(&self.status.conditions, type_)
    }

    fn event(&mut self, reason: &str, action: &str, message: impl Into<String>) {
        self.effects.push(Effect::Event {
            reason: reason.to_owned(),
            action: action.to_owned(),
            message: message.into(),
        });
    }

    /// The event of a phase left because `spec.suspend` became true.
    fn externally_suspended(&mut self, phase: Phase) {
        let message = format!("Externally suspended while in the {phase} phase");
        self.event(EXTERNALLY_SUSPENDED, SUSPENDING, message);
    }

    /// §2.4: set the phase; the metric is counted once the status patch succeeds.
    fn transition(&mut self, phase: Phase) {
        self.status.phase = phase;
        self.effects.push(Effect::CountPhase(phase));
    }

    fn requeue(&mut self, after: Duration) {
        self.requeue_after = Some(after);
    }

    fn fail_with(&mut self, error: impl Into<String>) {
        self.error = Some(error.into());
    }

    /// Time left until `start + period`, or `None` once the deadline is reached.
    fn remaining(&self, start: Timestamp, period: Duration) -> Option<Duration> {
        let deadline = start.saturating_add(period).unwrap_or(Timestamp::MAX);
        (self.now < deadline).then(|| {
            Duration::try_from(deadline.duration_since(self.now)).unwrap_or(Duration::ZERO)
        })
    }

    /// §2.5.
    fn reset_or_fail(&mut self, terminal: bool, increment: i32) {
        if !terminal && i64::from(self.status.resetting_count) < self.ft.retry_limit {
            self.status.resetting_count = self.status.resetting_count.saturating_add(increment);
            self.transition(Phase::Resetting);
        } else {
            self.transition(Phase::Failed);
        }
    }
}
