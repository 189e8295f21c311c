//! The webhook's serving certificate, managed as the reference's cert-controller rotator
//! manages it (§6.5): a CA and a serving certificate kept in the webhook Secret, the CA
//! injected into both webhook configurations, renewed before expiry; ready once the kubelet
//! has mounted the Secret's certificate where the webhook server reads it.

mod issue;
mod mounted;
mod pkcs8;
pub mod plan;
mod rotator;
pub mod validity;

pub use issue::{IssueError, Issued, new_ca, new_serving};
pub use mounted::{Established, NOT_READY, Readiness, in_sync};
pub use plan::{Injection, Names, Plan, SecretData, inject_ca_bundle, plan};
pub use rotator::{Rotator, Settings, SyncError};
pub use validity::{Invalid, valid_ca, valid_serving};
