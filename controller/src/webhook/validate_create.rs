//! The validating webhook on CREATE (§6.3): the structural rules, with the outcome of the RBAC
//! check passed in so that this stays a pure function.

use std::collections::BTreeMap;

use kube::api::GroupVersionKind;

use super::field::{FieldError, path};
use crate::api::{API_VERSION, AppWrapper, KIND};
use crate::discovery::gvk;
use crate::podsets::{check_pod_template, decode_template, infer_pod_sets, validate_pod_sets};

/// Kueue's limit on the PodSets of one workload.
pub const MAX_POD_SETS: usize = 8;

/// The outcome of the SubjectAccessReview for one component.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Access {
    Allowed,
    Denied {
        user: String,
        resource: String,
        namespace: String,
    },
    /// The review could not be made.
    Failed(String),
}

/// The components the RBAC check applies to (those whose template decodes), with their GVK.
pub fn access_requests(aw: &AppWrapper) -> Vec<(usize, GroupVersionKind)> {
    aw.spec
        .components
        .iter()
        .enumerate()
        .filter(|(_, c)| decode_template(&c.template).is_ok())
        .map(|(i, c)| (i, template_gvk(&c.template)))
        .collect()
}

fn template_gvk(template: &serde_json::Value) -> GroupVersionKind {
    gvk(
        crate::podsets::api_version(template),
        crate::podsets::kind(template),
    )
}

/// Every rule violated by a new AppWrapper, in the reference's order; `access` holds the RBAC
/// outcome per component index (absent when the check is disabled).
pub fn validate_create(aw: &AppWrapper, access: &BTreeMap<usize, Access>) -> Vec<FieldError> {
    let namespace = aw.metadata.namespace.as_deref().unwrap_or_default();
    let mut errors = Vec::new();
    let mut pod_sets = 0usize;
    for (i, component) in aw.spec.components.iter().enumerate() {
        let template = &component.template;
        if decode_template(template).is_err() {
            errors.push(FieldError::invalid(
                path::template(i),
                "failed to decode as JSON",
            ));
            continue;
        }
        if crate::podsets::api_version(template) == API_VERSION
            && crate::podsets::kind(template) == KIND
        {
            errors.push(FieldError::forbidden(
                path::template(i),
                "Nested AppWrappers are forbidden",
            ));
        }
        let object_namespace = template
            .pointer("/metadata/namespace")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if !object_namespace.is_empty() && object_namespace != namespace {
            errors.push(FieldError::forbidden(
                format!("{}.metadata.namespace", path::template(i)),
                "AppWrappers cannot create objects in other namespaces",
            ));
        }
        match access.get(&i) {
            Some(Access::Denied {
                user,
                resource,
                namespace,
            }) => errors.push(FieldError::forbidden(
                path::template(i),
                format!("User {user} is not authorized to create {resource} in {namespace}"),
            )),
            Some(Access::Failed(error)) => {
                errors.push(FieldError::internal(path::template(i), error.clone()))
            }
            Some(Access::Allowed) | None => {}
        }
        for (j, pod_set) in component.declared_pod_sets.iter().enumerate() {
            let field = format!("{}.podSets[{j}].path", path::component(i));
            if pod_set.path.is_empty() {
                errors.push(FieldError::required(&field, "podspec must specify path"));
            }
            if let Err(e) = check_pod_template(template, &pod_set.path) {
                errors.push(FieldError::invalid_value(
                    &field,
                    &pod_set.path,
                    format!("path does not refer to a v1.PodSpecTemplate: {e}"),
                ));
            }
        }
        match infer_pod_sets(template) {
            Err(e) => errors.push(FieldError::invalid(
                path::template(i),
                format!("error inferring PodSets: {e}"),
            )),
            Ok(inferred) => {
                pod_sets += component.declared_pod_sets.len().max(inferred.len());
                if let Err(e) = validate_pod_sets(&component.declared_pod_sets, &inferred) {
                    errors.push(FieldError::invalid(
                        format!("{}.podSets", path::component(i)),
                        e.to_string(),
                    ));
                }
            }
        }
    }
    if pod_sets == 0 {
        errors.push(FieldError::invalid(
            path::COMPONENTS,
            "components contains no podspecs",
        ));
    }
    if pod_sets > MAX_POD_SETS {
        errors.push(FieldError::invalid(
            path::COMPONENTS,
            format!("components contains {pod_sets} podspecs; at most {MAX_POD_SETS} are allowed"),
        ));
    }
    errors
}
