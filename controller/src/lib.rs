//! The embedded AppWrapper controller: observe, decide, act.

pub mod api;
pub mod crd;
