//! Step definitions, by area. Steps name AppWrappers as `it` / `its` / `the AppWrapper "x"`
//! (see [`crate::parameters`]); `Given` steps describe an AppWrapper before it is submitted,
//! `When` steps act on the cluster, `Then` steps assert. An assertion without `within N seconds` reads the
//! state once, as the previous step left it; with it, it polls until the state holds (for a
//! state reached asynchronously). `reaches phase` always names its deadline.
//!
//! The vocabulary is what the definitions register, listed with where each one's code is by
//! `awconf features steps`; `awconf features steps "And it reaches phase Running within 30
//! seconds"` finds the one definition a step's text matches. A file here holds the steps of
//! one area: defining an AppWrapper ([`appwrapper`]), submitting and acting on it, pods,
//! nodes, Kueue's queues ([`kueue`]), the controller's stops and settings
//! ([`controller_restarts`]), admission ([`admission`]), assertions on state ([`assertions`],
//! [`objects`]), timing windows ([`timing_windows`]), what the monitor saw ([`monitor`]),
//! objects no AppWrapper owns ([`unowned_objects`]), kinds a scenario serves and takes away
//! ([`custom_kinds`]), upgrades of Kueue ([`kueue_upgrade`]) and
//! of the controller ([`controller_upgrade`]).

pub mod admission;
pub mod appwrapper;
pub mod assertions;
pub mod controller_restarts;
pub mod controller_upgrade;
pub mod custom_kinds;
pub mod kueue;
pub mod kueue_upgrade;
pub mod monitor;
pub mod nodes;
pub mod objects;
pub mod outcome;
pub mod pods;
pub mod registry;
pub mod timing_windows;
pub mod unowned_objects;

use std::time::Duration;

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// `within <deadline>` (see [`crate::deadlines`]) when the step says so; without it an assertion
/// reads the state once.
pub fn patience(deadline: &str) -> anyhow::Result<crate::wait::Patience> {
    if deadline.is_empty() {
        return Ok(crate::wait::Patience::Now);
    }
    deadline_of(deadline).map(crate::wait::Patience::Within)
}

/// A deadline a step names (see [`crate::deadlines`]).
pub fn deadline_of(text: &str) -> anyhow::Result<Duration> {
    crate::deadlines::parse(text).map_err(anyhow::Error::msg)
}
