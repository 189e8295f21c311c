//! Phase handlers other than Resuming and Running (§2.3).

use super::reasons::*;
use super::{Decider, Effect, REQUEUE_DELETING};
use crate::annotations::DELETION_ON_FAILURE_GRACE_PERIOD;
use crate::api::condition::{
    DELETING_RESOURCES, PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY,
};
use crate::api::{AppWrapperComponentStatus, Phase};
use crate::conditions::CondStatus;
use crate::duration::GoDuration;

impl Decider<'_> {
    /// Initialize `status.componentStatus` from the effective PodSets when its length is wrong.
    /// Returns false (with the error recorded) when they cannot be computed.
    pub(super) fn ensure_component_status(&mut self) -> bool {
        if self.status.component_status.len() == self.obs.component_count {
            return true;
        }
        match &self.obs.effective_pod_sets {
            Ok(pod_sets) if pod_sets.len() == self.obs.component_count => {
                self.status.component_status = pod_sets
                    .iter()
                    .map(|p| AppWrapperComponentStatus {
                        pod_sets: p.clone(),
                        ..AppWrapperComponentStatus::default()
                    })
                    .collect();
                true
            }
            Ok(pod_sets) => {
                self.fail_with(format!(
                    "computed PodSets for {} components, expected {}",
                    pod_sets.len(),
                    self.obs.component_count
                ));
                false
            }
            Err(e) => {
                self.fail_with(e.clone());
                false
            }
        }
    }

    /// §2.3.1.
    pub(super) fn handle_empty(&mut self) {
        if self.ensure_component_status() {
            self.transition(Phase::Suspended);
        }
    }

    /// §2.3.2.
    pub(super) fn handle_suspended(&mut self) {
        if self.obs.suspend {
            return;
        }
        if !self.obs.has_finalizer {
            self.effects.push(Effect::AddFinalizer);
        }
        self.set(
            QUOTA_RESERVED,
            CondStatus::True,
            RESUMING,
            MSG_SUSPEND_FALSE,
        );
        self.set(
            RESOURCES_DEPLOYED,
            CondStatus::True,
            RESUMING,
            MSG_SUSPEND_FALSE,
        );
        self.set(PODS_READY, CondStatus::False, RESUMING, MSG_SUSPEND_FALSE);
        self.set(UNHEALTHY, CondStatus::False, RESUMING, MSG_SUSPEND_FALSE);
        self.transition(Phase::Resuming);
        self.resume_at_once();
    }

    /// §2.3.5.
    pub(super) fn handle_suspending(&mut self) {
        if !self.undeploy(SUSPENDED, MSG_SUSPEND_TRUE) {
            return;
        }
        self.set(
            QUOTA_RESERVED,
            CondStatus::False,
            SUSPENDED,
            MSG_SUSPEND_TRUE,
        );
        self.clear(PODS_READY, SUSPENDED, "");
        self.clear(UNHEALTHY, SUSPENDED, "");
        self.transition(Phase::Suspended);
    }

    /// §2.3.6.
    pub(super) fn handle_resetting(&mut self) {
        if self.obs.suspend {
            self.externally_suspended(Phase::Resetting);
            self.transition(Phase::Suspending);
            return;
        }
        self.clear(PODS_READY, RESETTING, "");
        if !self.undeploy(RESETTING, MSG_RESET_DELETED) {
            return;
        }
        if let Some(reset) = self.ltt(UNHEALTHY)
            && let Some(left) = self.remaining(reset, self.ft.retry_pause_period)
        {
            self.requeue(left);
            return;
        }
        self.set(
            RESOURCES_DEPLOYED,
            CondStatus::True,
            RESUMING,
            MSG_RESET_COMPLETE,
        );
        self.transition(Phase::Resuming);
        self.resume_at_once();
    }

    /// §2.3.7.
    pub(super) fn handle_failed(&mut self) {
        let delay = self.ft.deletion_on_failure_grace_period;
        let paused = !delay.is_zero();
        if paused && !self.obs.suspend {
            let message = format!(
                "{DELETION_ON_FAILURE_GRACE_PERIOD} has value {}",
                GoDuration::from_std(delay)
            );
            self.set(
                DELETING_RESOURCES,
                CondStatus::False,
                DELETION_PAUSED,
                &message,
            );
            if let Some(since) = self.ltt(DELETING_RESOURCES)
                && let Some(left) = self.remaining(since, delay)
            {
                self.requeue(left);
                return;
            }
        }
        let message = if paused && self.obs.suspend {
            MSG_KUEUE_FORCED_DELETION
        } else {
            MSG_FAILED_DELETED
        };
        if !self.undeploy(FAILED, message) {
            return;
        }
        self.set(QUOTA_RESERVED, CondStatus::False, FAILED, MSG_NO_RESOURCES);
    }

    /// §2.3.8.
    pub(super) fn handle_succeeded(&mut self) {
        if !self.is_true(RESOURCES_DEPLOYED) {
            return;
        }
        let ttl = self.ft.success_ttl;
        if let Some(deployed) = self.ltt(RESOURCES_DEPLOYED)
            && let Some(left) = self.remaining(deployed, ttl)
        {
            self.requeue(left);
            return;
        }
        let message = format!(
            "Time to live after success of {} expired",
            GoDuration::from_std(ttl)
        );
        self.undeploy(SUCCEEDED, &message);
    }

    /// While ResourcesDeployed is True, deletes the components; once they are all gone, sets it
    /// False with `reason` and `message`. Returns whether nothing is deployed any more; when
    /// not, the deletion is still under way and a requeue is set.
    fn undeploy(&mut self, reason: &str, message: &str) -> bool {
        if !self.is_true(RESOURCES_DEPLOYED) {
            return true;
        }
        if !self.delete_components() {
            self.requeue(REQUEUE_DELETING);
            return false;
        }
        self.set(RESOURCES_DEPLOYED, CondStatus::False, reason, message);
        true
    }
}
