//! The controller's Prometheus metrics (§8.1, §8.2): `appwrapper_phase_total` and the
//! controller-runtime families of the AppWrapper controller, with controller-runtime's names,
//! labels, help texts and buckets.

mod queue;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use queue::QueueTracker;

use crate::api::Phase;

/// The controller's name in the metrics (the reference names it after the kind); its queue has
/// the same name.
pub const CONTROLLER: &str = "AppWrapper";

const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    controller: String,
    name: String,
}

/// controller-runtime's priority queue labels the depth by priority; ours has only the normal
/// one.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    controller: String,
    name: String,
    priority: String,
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
    reconcile_time: Family<ControllerLabels, Histogram>,
    queue_depth: Family<DepthLabels, Gauge>,
    queue_adds: Family<QueueLabels, Counter>,
    queue_duration: Family<QueueLabels, Histogram>,
    queue: Mutex<QueueTracker<String>>,
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
        let reconcile_time = Family::<ControllerLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(RECONCILE_TIME_BUCKETS)) as fn() -> Histogram,
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time.clone(),
        );
        let queue_depth = Family::<DepthLabels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            queue_depth.clone(),
        );
        let queue_adds = Family::<QueueLabels, Counter>::default();
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            queue_adds.clone(),
        );
        let queue_duration = Family::<QueueLabels, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(10e-9, 10.0, 12))) as fn() -> Histogram,
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_duration.clone(),
        );
        Metrics {
            registry,
            phase_total,
            reconcile_total,
            reconcile_errors_total,
            reconcile_time,
            queue_depth,
            queue_adds,
            queue_duration,
            queue: Mutex::new(QueueTracker::default()),
        }
    }
}

fn controller() -> ControllerLabels {
    ControllerLabels {
        controller: CONTROLLER.to_owned(),
    }
}

fn queue() -> QueueLabels {
    QueueLabels {
        controller: CONTROLLER.to_owned(),
        name: CONTROLLER.to_owned(),
    }
}

fn depth() -> DepthLabels {
    DepthLabels {
        controller: CONTROLLER.to_owned(),
        name: CONTROLLER.to_owned(),
        priority: "0".to_owned(),
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

    /// The controller's series at zero, as controller-runtime shows them once the controller
    /// starts (on a standby replica they are absent).
    pub fn controller_started(&self) {
        for result in [
            ReconcileResult::Error,
            ReconcileResult::RequeueAfter,
            ReconcileResult::Requeue,
            ReconcileResult::Success,
        ] {
            let _ = self.reconcile_total.get_or_create(&ReconcileLabels {
                controller: CONTROLLER.to_owned(),
                result: result.as_str().to_owned(),
            });
        }
        let _ = self.reconcile_errors_total.get_or_create(&controller());
        let _ = self.queue_adds.get_or_create(&queue());
        let _ = self.queue_depth.get_or_create(&depth());
    }

    /// A reconcile ended with `result` after `took`.
    pub fn count_reconcile(&self, result: ReconcileResult, took: Duration) {
        let labels = ReconcileLabels {
            controller: CONTROLLER.to_owned(),
            result: result.as_str().to_owned(),
        };
        self.reconcile_total.get_or_create(&labels).inc();
        if result == ReconcileResult::Error {
            self.reconcile_errors_total
                .get_or_create(&controller())
                .inc();
        }
        self.reconcile_time
            .get_or_create(&controller())
            .observe(took.as_secs_f64());
    }

    /// A watch event maps to the AppWrapper `key` (`namespace/name`).
    pub fn queue_add(&self, key: String) {
        self.with_queue(|q, now| q.add(key, now));
    }

    /// A reconcile of `key` asked to run again after `delay`.
    pub fn queue_add_after(&self, key: String, delay: Duration) {
        self.with_queue(|q, now| {
            q.add_at(key, now + delay);
            0
        });
    }

    /// A reconcile of `key` starts.
    pub fn queue_take(&self, key: &str) {
        let mut waited = None;
        self.with_queue(|q, now| {
            let (w, adds) = q.take(&key.to_owned(), now);
            waited = w;
            adds
        });
        if let Some(waited) = waited {
            self.queue_duration
                .get_or_create(&queue())
                .observe(waited.as_secs_f64());
        }
    }

    /// Runs `change` on the queue tracker, then counts its adds and sets the depth.
    fn with_queue(&self, change: impl FnOnce(&mut QueueTracker<String>, Instant) -> u64) {
        let Ok(mut tracker) = self.queue.lock() else {
            return;
        };
        let adds = change(&mut tracker, Instant::now());
        if adds > 0 {
            self.queue_adds.get_or_create(&queue()).inc_by(adds);
        }
        let queued = i64::try_from(tracker.depth()).unwrap_or(i64::MAX);
        self.queue_depth.get_or_create(&depth()).set(queued);
    }

    /// The text exposition format served at `/metrics`.
    pub fn encode(&self) -> String {
        if self.queue_depth.get(&depth()).is_some() {
            self.with_queue(|q, now| q.promote(now));
        }
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
        m.count_reconcile(ReconcileResult::Success, Duration::from_millis(20));
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

    #[test]
    fn the_controller_runtime_families_carry_its_names_and_labels() {
        let m = Metrics::default();
        assert!(
            !m.encode().contains("controller_runtime_reconcile_total{"),
            "no series before the controller starts"
        );
        m.controller_started();
        m.queue_add("ns/a".to_owned());
        m.queue_add("ns/a".to_owned());
        m.queue_add("ns/b".to_owned());
        m.queue_take("ns/a");
        m.count_reconcile(ReconcileResult::Error, Duration::from_millis(7));
        m.queue_add_after("ns/a".to_owned(), Duration::ZERO);
        let text = m.encode();
        for line in [
            r#"controller_runtime_reconcile_total{controller="AppWrapper",result="error"} 1"#,
            r#"controller_runtime_reconcile_total{controller="AppWrapper",result="success"} 0"#,
            r#"controller_runtime_reconcile_total{controller="AppWrapper",result="requeue"} 0"#,
            r#"controller_runtime_reconcile_total{controller="AppWrapper",result="requeue_after"} 0"#,
            r#"controller_runtime_reconcile_errors_total{controller="AppWrapper"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="0.01",controller="AppWrapper"} 1"#,
            r#"controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="AppWrapper"} 0"#,
            r#"controller_runtime_reconcile_time_seconds_count{controller="AppWrapper"} 1"#,
            r#"workqueue_adds_total{controller="AppWrapper",name="AppWrapper"} 3"#,
            r#"workqueue_depth{controller="AppWrapper",name="AppWrapper",priority="0"} 2"#,
            r#"workqueue_queue_duration_seconds_count{controller="AppWrapper",name="AppWrapper"} 1"#,
            r#"workqueue_queue_duration_seconds_bucket{le="1000.0",controller="AppWrapper",name="AppWrapper"} 1"#,
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
