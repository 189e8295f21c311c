//! Empty, Suspended and Suspending: an AppWrapper before Kueue admits it and after Kueue
//! takes its admission back (§2.3.1, §2.3.2, §2.3.5).

use super::reasons::*;
use super::{Decider, Effect};
use crate::api::condition::{PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY};
use crate::api::{AppWrapperComponentStatus, Phase};
use crate::conditions::CondStatus;

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
}
