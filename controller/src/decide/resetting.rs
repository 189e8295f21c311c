//! Resetting: a failed attempt's components deleted, then the retry pause (§2.3.6).

use super::Decider;
use super::reasons::*;
use crate::api::Phase;
use crate::api::condition::{PODS_READY, RESOURCES_DEPLOYED, UNHEALTHY};
use crate::conditions::CondStatus;

impl Decider<'_> {
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
}
