//! The validating webhook on UPDATE (§6.4): what Kueue and users may not change.

use super::field::{FieldError, path};
use crate::api::{AppWrapper, USER_LABEL, USERID_LABEL};
use crate::podsets::replicas;

pub const IMMUTABLE: &str = "attempt to change immutable field";

pub fn validate_update(old: &AppWrapper, new: &AppWrapper) -> Vec<FieldError> {
    let forbidden = |field: String| FieldError::forbidden(field, IMMUTABLE);
    let (old_components, new_components) = (&old.spec.components, &new.spec.components);
    if old_components.len() != new_components.len() {
        return vec![forbidden(path::COMPONENTS.to_owned())];
    }
    let mut errors = Vec::new();
    for (i, (before, after)) in old_components.iter().zip(new_components).enumerate() {
        if before.template != after.template {
            errors.push(forbidden(format!("{}.raw", path::template(i))));
        }
        // The reference spells these paths with a lower-case `podsets`.
        let pod_sets = format!("{}.podsets", path::component(i));
        if before.declared_pod_sets.len() != after.declared_pod_sets.len() {
            errors.push(forbidden(pod_sets));
            continue;
        }
        for (j, (b, a)) in before
            .declared_pod_sets
            .iter()
            .zip(&after.declared_pod_sets)
            .enumerate()
        {
            if replicas(b) != replicas(a) {
                errors.push(forbidden(format!("{pod_sets}[{j}].replicas")));
            }
            if b.path != a.path {
                errors.push(forbidden(format!("{pod_sets}[{j}].path")));
            }
        }
    }
    for key in [USER_LABEL, USERID_LABEL] {
        let label = |aw: &AppWrapper| aw.metadata.labels.as_ref()?.get(key).cloned();
        if label(old).unwrap_or_default() != label(new).unwrap_or_default() {
            errors.push(forbidden(path::label(key)));
        }
    }
    if old.spec.managed_by != new.spec.managed_by {
        errors.push(forbidden("spec.managedBy".to_owned()));
    }
    errors
}
