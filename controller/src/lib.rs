//! The embedded AppWrapper controller: observe, decide, act.

pub mod act;
pub mod annotations;
pub mod api;
pub mod cache;
pub mod certs;
pub mod conditions;
pub mod config;
pub mod control_loop;
pub mod crd;
pub mod decide;
pub mod discovery;
pub mod duration;
pub mod endpoints;
pub mod events;
pub mod https;
pub mod leader;
pub mod merge_patch;
pub mod metrics;
pub mod namespace;
pub mod node_health;
pub mod observe;
pub mod own_writes;
pub mod pod_observation;
pub mod podsets;
pub mod resources;
pub mod webhook;
