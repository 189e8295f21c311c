//! The controller's Prometheus metrics (§8.1, §8.2).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::api::Phase;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    namespace: String,
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// How a reconcile ended, for `controller_runtime_reconcile_total{result}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReconcileResult {
    Success,
    Requeue,
    RequeueAfter,
    Error,
}

impl ReconcileResult {
    fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::RequeueAfter => "requeue_after",
            ReconcileResult::Error => "error",
        }
    }
}

pub struct Metrics {
    registry: Registry,
    phase_total: Family<PhaseLabels, Counter>,
    reconcile_total: Family<ReconcileLabels, Counter>,
    reconcile_errors_total: Family<ControllerLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let phase_total = Family::<PhaseLabels, Counter>::default();
        registry.register(
            "appwrapper_phase",
            "The total number of times an appwrapper transitioned to a given phase per namespace.",
            phase_total.clone(),
        );
        let reconcile_total = Family::<ReconcileLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconcile_total.clone(),
        );
        let reconcile_errors_total = Family::<ControllerLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            reconcile_errors_total.clone(),
        );
        Metrics {
            registry,
            phase_total,
            reconcile_total,
            reconcile_errors_total,
        }
    }
}

impl Metrics {
    pub fn count_phase(&self, namespace: &str, phase: Phase) {
        self.phase_total
            .get_or_create(&PhaseLabels {
                namespace: namespace.to_owned(),
                phase: phase.as_str().to_owned(),
            })
            .inc();
    }

    pub fn phase_count(&self, namespace: &str, phase: Phase) -> u64 {
        self.phase_total
            .get_or_create(&PhaseLabels {
                namespace: namespace.to_owned(),
                phase: phase.as_str().to_owned(),
            })
            .get()
    }

    pub fn count_reconcile(&self, result: ReconcileResult) {
        let labels = ReconcileLabels {
            controller: "AppWrapper".to_owned(),
            result: result.as_str().to_owned(),
        };
        self.reconcile_total.get_or_create(&labels).inc();
        if result == ReconcileResult::Error {
            let labels = ControllerLabels {
                controller: labels.controller,
            };
            self.reconcile_errors_total.get_or_create(&labels).inc();
        }
    }

    /// The text exposition format served at `/metrics`.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            tracing::warn!("encoding metrics failed");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_counter_is_exposed_with_its_labels() {
        let m = Metrics::default();
        m.count_phase("ns", Phase::Running);
        m.count_phase("ns", Phase::Running);
        m.count_reconcile(ReconcileResult::Success);
        assert_eq!(m.phase_count("ns", Phase::Running), 2);
        let text = m.encode();
        assert!(
            text.contains(r#"appwrapper_phase_total{namespace="ns",phase="Running"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"controller_runtime_reconcile_total{controller="AppWrapper",result="success"} 1"#
            ),
            "{text}"
        );
    }
}
