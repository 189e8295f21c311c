//! The AppWrapper conformance suite: a cucumber World per scenario (its own namespace and
//! queues), step definitions that read like the spec, a partial-YAML matcher and the reports,
//! on the invariant monitor (`monitor`) and the cluster's objects (`objects`).
//!
//! Entry point: [`run_suite`] (or [`Plan::prepare`] then [`run_plan`]), called by
//! `tests/conformance.rs` (under `cargo test`) and by `awconf run`.

pub mod annotations;
pub mod bounds;
pub mod controller;
pub mod environment;
pub mod features;
pub mod fixtures;
pub mod harness;
pub mod hooks;
pub mod isolation;
pub mod latency;
pub mod logging;
pub mod matcher;
pub mod operator_config;
pub mod options;
pub mod plan;
pub mod reference;
pub mod report;
pub mod spec;
pub mod steps;
pub mod suite;
pub mod suite_progress;
pub mod version_tags;
pub mod wait;
pub mod webhook;
pub mod world;

pub use environment::EnvironmentFailed;
pub use monitor;
pub use objects::yaml;
pub use options::{ClusterChoice, ControllerMode, FeatureSet, SuiteOptions, Summary};
pub use plan::Plan;
pub use suite::{run_plan, run_suite};
pub use world::AwWorld;
