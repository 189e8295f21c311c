//! PodSets (§5): the path grammar, the PodSpecTemplate check, replica reading, inference for
//! known kinds, declared-vs-inferred validation, effective PodSets and the expected pod count.

mod effective;
mod gofmt;
mod infer;
pub mod path;
mod pod_template;
mod podspec;
mod replicas;
mod template;
mod validate;

pub use effective::{
    component_status, component_status_initialized, count_expected_pods, effective_pod_sets,
    expected_pods, initial_component_status,
};
pub(crate) use gofmt::go_sprint;
pub use infer::{
    TAS_POD_INDEX_LABEL, TAS_SUB_GROUP_COUNT, TAS_SUB_GROUP_INDEX_LABEL, infer_pod_sets,
};
pub use path::PathError;
pub use pod_template::{PodTemplateError, check_pod_template};
pub use podspec::{PodSpecError, check_pod_spec};
pub use replicas::{inferred_replicas, optional_int, replicas};
pub use template::{TemplateError, api_version, decode_template, kind};
pub use validate::{PodSetMismatch, validate_pod_sets};

/// Why the PodSets of a component could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodSetError {
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("at path position '{path}' non-int value {value}")]
    NonIntReplicas { path: String, value: String },
    #[error("{path} does not refer to a v1.PodSpecTemplate: {source}")]
    NotPodSpecTemplate {
        path: String,
        source: PodTemplateError,
    },
}
