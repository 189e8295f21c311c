//! Why a component object could not be built, and which of those failures are fatal (§4.6).

use super::maps::MapConflict;
use super::owner::AlreadyOwned;
use crate::podsets::{PathError, PodSetError, TemplateError};

/// Why a component object could not be built. See [`BuildError::is_fatal`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("component index {index} out of range: the appwrapper has {count} components")]
    NoSuchComponent { index: usize, count: usize },
    #[error("appwrapper has no {0}")]
    MissingIdentity(&'static str),
    #[error(transparent)]
    PodSets(PodSetError),
    #[error(transparent)]
    Decode(#[from] TemplateError),
    #[error(
        "component namespace \"{namespace}\" is different from appwrapper namespace \"{aw_namespace}\""
    )]
    NamespaceMismatch {
        namespace: String,
        aw_namespace: String,
    },
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("content at {path} has metadata that is not a map")]
    MetadataNotAMap { path: String },
    #[error("content at {path} does not contain a spec")]
    NoSpec { path: String },
    #[error("conflict updating {field}: {conflict}")]
    Conflict {
        field: &'static str,
        conflict: MapConflict,
    },
    #[error("content at {path} has spec.{field} that is not a list")]
    NotAList { path: String, field: &'static str },
    #[error(transparent)]
    AlreadyOwned(#[from] AlreadyOwned),
}

impl BuildError {
    /// Fatal errors fail the AppWrapper at once (§4.6): everything wrong with the template or
    /// its injection. Retryable ones are retried within the admission grace period: PodSets that
    /// could not be computed in memory (§5.7) and an AppWrapper without name, namespace or uid.
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            BuildError::NoSuchComponent { .. }
                | BuildError::MissingIdentity(_)
                | BuildError::PodSets(_)
        )
    }
}
