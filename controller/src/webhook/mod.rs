//! The AppWrapper admission webhooks (§6): defaulting on CREATE, validation on CREATE and
//! UPDATE, served over HTTPS. The rules are pure functions; `admission` adapts them to
//! AdmissionReviews and `server` to HTTP.

mod admission;
mod decode;
mod defaulting;
pub mod field;
mod rbac;
mod registration;
mod sanitize;
mod server;
mod validate_create;
mod validate_update;

pub use crate::https::{CertError, ReloadingCert};
pub use admission::{Review, Webhooks};
pub use defaulting::{default_labels, labels_patch};
pub use field::{ErrorType, FieldError, aggregate, denied_status};
pub use rbac::AccessReviewer;
pub use registration::{MUTATING_WEBHOOK, VALIDATING_WEBHOOK, webhook_configurations};
pub use sanitize::sanitize;
pub use server::{
    DEFAULT_CERT_DIR, DEFAULT_PORT, MUTATE_PATH, ServeError, ServerOptions, VALIDATE_PATH,
    WebhookServer, router, serve,
};
pub use validate_create::{Access, MAX_POD_SETS, access_requests, validate_create};
pub use validate_update::{IMMUTABLE, validate_update};

#[cfg(test)]
mod tests;
