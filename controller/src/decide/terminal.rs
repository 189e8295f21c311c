//! Failed and Succeeded: the deletion-on-failure pause and the success TTL, then the
//! components deleted (§2.3.7, §2.3.8).

use super::Decider;
use super::reasons::*;
use crate::annotations::DELETION_ON_FAILURE_GRACE_PERIOD;
use crate::api::condition::{DELETING_RESOURCES, QUOTA_RESERVED, RESOURCES_DEPLOYED};
use crate::conditions::CondStatus;
use crate::duration::GoDuration;

impl Decider<'_> {
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
}
