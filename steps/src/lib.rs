//! The AppWrapper conformance suite: a cucumber World per scenario (its own namespace and
//! queues), step definitions that read like the spec, a partial-YAML matcher and the reports,
//! on the test environment (`environment`: the cluster, Kueue, the controller under test and
//! the run's options), the invariant monitor (`monitor`) and the cluster's objects (`objects`).
//!
//! Entry point: `suite::run_suite` (or `plan::Plan::prepare` then `suite::run_plan`), called by
//! `tests/conformance.rs` (under `cargo test`) and by `awconf run`.

pub mod deadlines;
pub mod expected_durations;
pub mod failure_bundle;
pub mod hooks;
pub mod logging;
pub mod matcher;
pub mod parameters;
pub mod plan;
pub mod reruns;
pub mod run_context;
pub mod serial_offers;
pub mod steps;
pub mod suite;
pub mod suite_progress;
pub mod world;

pub use environment::{
    self, EnvironmentFailed, fixtures, latency, operator_config, options, reference, under_test,
    wait, webhook,
};
pub use features::{self, annotations, spec, version_tags};
pub use monitor;
pub use objects::yaml;
pub use options::{ClusterChoice, ControllerMode, FeatureSet, SuiteOptions};
pub use report::{self, Summary};
