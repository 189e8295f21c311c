//! Resuming: createComponents and the component-status protocol (§2.3.3, §4.1, §4.6).

use super::reasons::*;
use super::{
    BuildFailure, CreateErrorClass, CreateOutcome, CreateResult, Decider, Effect,
    REQUEUE_CREATE_RETRY,
};
use crate::api::Phase;
use crate::api::condition::{RESOURCES_DEPLOYED, UNHEALTHY};
use crate::conditions::{self, CondStatus};

struct CreateError {
    message: String,
    fatal: bool,
}

impl Decider<'_> {
    /// §2.3.3.
    pub(super) fn handle_resuming(&mut self) {
        if self.obs.suspend {
            self.externally_suspended(Phase::Resuming);
            self.transition(Phase::Suspending);
            return;
        }
        if !self.ensure_component_status() {
            return;
        }
        if let Some(outcome) = &self.obs.create_outcome
            && let Err(e) = self.apply_create_outcome(outcome)
        {
            self.create_failed(e);
            return;
        }
        let Some(index) = self.next_to_create() else {
            self.transition(Phase::Running);
            return;
        };
        match self.obs.component(index).desired {
            None => self.fail_with(format!("component {index} was not built")),
            Some(Err(BuildFailure { message, fatal })) => {
                self.create_failed(CreateError { message, fatal });
            }
            Some(Ok(desired)) => {
                let now = self.now;
                let cs = &mut self.status.component_status[index];
                if conditions::find(&cs.conditions, RESOURCES_DEPLOYED).is_none() {
                    cs.name = desired.name;
                    cs.kind = desired.kind;
                    cs.api_version = desired.api_version;
                    conditions::set(
                        &mut cs.conditions,
                        RESOURCES_DEPLOYED,
                        CondStatus::Unknown,
                        COMPONENT_CREATION_INITIATED,
                        "",
                        now,
                    );
                }
                self.effects.push(Effect::CreateComponent {
                    index,
                    object: desired.object,
                });
            }
        }
    }

    /// Just entered Resuming: creates the next component in the same decision, so that one
    /// status write carries the phase and the creation mark. Only when that component could
    /// be built: one that cannot fails the workload from Resuming in the next reconcile, as the
    /// phase graph has no edge from Suspended or Resetting to Failed.
    pub(super) fn resume_at_once(&mut self) {
        if let Some(index) = self.next_to_create()
            && matches!(self.obs.component(index).desired, Some(Ok(_)))
        {
            self.handle_resuming();
        }
    }

    fn next_to_create(&self) -> Option<usize> {
        self.status
            .component_status
            .iter()
            .position(|cs| !conditions::is_true(&cs.conditions, RESOURCES_DEPLOYED))
    }

    /// Records the result of a create in the component's status (§4.6 steps 2–3).
    fn apply_create_outcome(&mut self, outcome: &CreateOutcome) -> Result<(), CreateError> {
        let now = self.now;
        let aw_name = self.obs.name.clone();
        let Some(cs) = self.status.component_status.get_mut(outcome.index) else {
            return Err(CreateError {
                message: format!("no component with index {}", outcome.index),
                fatal: false,
            });
        };
        let created = |cs: &mut crate::api::AppWrapperComponentStatus, name: &str| {
            cs.name = name.to_owned();
            conditions::set(
                &mut cs.conditions,
                RESOURCES_DEPLOYED,
                CondStatus::True,
                COMPONENT_CREATED_SUCCESSFULLY,
                "",
                now,
            );
        };
        match &outcome.result {
            CreateResult::Created { name } => {
                created(cs, name);
                Ok(())
            }
            CreateResult::AlreadyExists { name, controller }
                if controller.as_deref() == Some(aw_name.as_str()) =>
            {
                created(cs, name);
                Ok(())
            }
            CreateResult::AlreadyExists { name, .. } => Err(CreateError {
                message: format!("resource {name} exists, but is not controlled by appwrapper"),
                fatal: true,
            }),
            CreateResult::ExistingUnreadable { message } => Err(CreateError {
                message: message.clone(),
                fatal: false,
            }),
            CreateResult::Failed { message, class } => {
                conditions::set(
                    &mut cs.conditions,
                    RESOURCES_DEPLOYED,
                    CondStatus::False,
                    COMPONENT_CREATION_ERRORED,
                    "",
                    now,
                );
                Err(CreateError {
                    message: message.clone(),
                    fatal: *class != CreateErrorClass::Other,
                })
            }
        }
    }

    /// §2.3.3 steps 4–5.
    fn create_failed(&mut self, error: CreateError) {
        if !error.fatal
            && let Some(deployed) = self.ltt(RESOURCES_DEPLOYED)
            && self
                .remaining(deployed, self.ft.admission_grace_period)
                .is_some()
        {
            self.requeue(REQUEUE_CREATE_RETRY);
            return;
        }
        let message = format!("error creating components: {}", error.message);
        self.set(UNHEALTHY, CondStatus::True, CREATE_FAILED, &message);
        self.event(CREATE_FAILED, UNHEALTHY, message);
        if error.fatal {
            self.transition(Phase::Failed);
        } else {
            self.reset_or_fail(false, 1);
        }
    }
}
