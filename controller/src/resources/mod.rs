//! Resource management (§4.2–4.5): building the objects the controller creates for an
//! AppWrapper's components. Pure functions over JSON; creating them is the reconciler's job.

mod autopilot;
mod build;
mod build_error;
mod inject;
pub mod maps;
mod owner;

pub use autopilot::{
    AffinityError, AutopilotAntiAffinity, inject_anti_affinity, requests_resource,
};
pub use build::{BuildOptions, build_component};
pub use build_error::BuildError;
pub use owner::{AlreadyOwned, controller_name, controller_reference, set_controller_reference};
