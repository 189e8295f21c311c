//! Running: health checks in the order of §2.3.4.

use super::reasons::*;
use super::summary::{component_summary, expected_pods, pod_summary};
use super::{Decider, REQUEUE_NOT_READY, REQUEUE_READY};
use crate::api::Phase;
use crate::api::condition::{PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY};
use crate::conditions::CondStatus;

impl Decider<'_> {
    pub(super) fn handle_running(&mut self) {
        if self.obs.suspend {
            self.externally_suspended(Phase::Running);
            self.transition(Phase::Suspending);
            return;
        }
        let components = match component_summary(&self.status, self.obs) {
            Ok(c) => c,
            Err(e) => return self.fail_with(e),
        };
        let expected = match expected_pods(&self.status, self.obs) {
            Ok(n) => n,
            Err(e) => return self.fail_with(e),
        };
        let monitor_nodes = self
            .config
            .appwrapper
            .autopilot
            .as_ref()
            .is_some_and(|a| a.monitor_nodes);
        let pods = pod_summary(
            &self.obs.pods,
            &self.ft,
            &self.obs.no_execute_nodes,
            monitor_nodes,
        );

        if components.deployed != components.expected {
            let message = format!(
                "Only found {} deployed components, but was expecting {}",
                components.deployed, components.expected
            );
            self.unhealthy(MISSING_COMPONENT, &message);
            self.transition(Phase::Failed);
            return;
        }
        if components.failed > 0 {
            let message = format!("Found {} failed components", components.failed);
            self.unhealthy(FAILED_COMPONENT, &message);
            self.reset_or_fail(pods.terminal_failure, 1);
            return;
        }
        if pods.succeeded >= expected && pods.pending + pods.running + pods.failed == 0 {
            let message = format!(
                "{} pods succeeded and no running, pending, or failed pods",
                pods.succeeded
            );
            self.set(QUOTA_RESERVED, CondStatus::False, SUCCEEDED, &message);
            self.set(RESOURCES_DEPLOYED, CondStatus::True, SUCCEEDED, &message);
            self.transition(Phase::Succeeded);
            return;
        }
        if pods.failed > 0 {
            self.set(UNHEALTHY, CondStatus::True, FOUND_FAILED_PODS, "");
            if let Some(detected) = self.ltt(UNHEALTHY)
                && let Some(left) = self.remaining(detected, self.ft.failure_grace_period)
            {
                self.requeue(left);
                return;
            }
            let message = format!("{} failed pods", pods.failed);
            self.event(FOUND_FAILED_PODS, UNHEALTHY, message);
            self.reset_or_fail(pods.terminal_failure, 1);
            return;
        }
        if !pods.no_execute_nodes.is_empty() {
            let nodes: Vec<_> = pods.no_execute_nodes.iter().map(String::as_str).collect();
            let message = format!(
                "Workload contains pods using NoExecute resources on Nodes: [{}]",
                nodes.join(" ")
            );
            self.unhealthy(AUTOPILOT_NO_EXECUTE, &message);
            self.reset_or_fail(false, 0);
            return;
        }
        self.clear(UNHEALTHY, FOUND_NO_FAILED_PODS, "");
        if pods.running + pods.succeeded >= expected {
            let message = format!(
                "{} pods running; {} pods succeeded",
                pods.running, pods.succeeded
            );
            self.set(
                PODS_READY,
                CondStatus::True,
                SUFFICIENT_PODS_READY,
                &message,
            );
            self.requeue(REQUEUE_READY);
            return;
        }
        let details = format!(
            "{} pods pending; {} pods running; {} pods succeeded",
            pods.pending, pods.running, pods.succeeded
        );
        self.clear(PODS_READY, INSUFFICIENT_PODS_READY, &details);
        let grace = if pods.pending + pods.running + pods.succeeded >= expected {
            self.ft.warmup_grace_period
        } else {
            self.ft.admission_grace_period
        };
        if let Some(deployed) = self.ltt(RESOURCES_DEPLOYED)
            && self.remaining(deployed, grace).is_some()
        {
            self.requeue(REQUEUE_NOT_READY);
            return;
        }
        self.unhealthy(INSUFFICIENT_PODS_READY, &details);
        self.reset_or_fail(pods.terminal_failure, 1);
    }

    /// Sets `Unhealthy=True/<reason>/<message>` and emits the matching event.
    fn unhealthy(&mut self, reason: &str, message: &str) {
        self.set(UNHEALTHY, CondStatus::True, reason, message);
        self.event(reason, UNHEALTHY, message);
    }
}
