//! Effective PodSets and componentStatus initialization (§5.7), expected pod count (§3.2).

use std::borrow::Cow;

use super::PodSetError;
use super::infer::infer_pod_sets;
use super::replicas::replicas;
use super::template::decode_template;
use crate::api::{AppWrapper, AppWrapperComponent, AppWrapperComponentStatus, AppWrapperSpec};

/// The declared PodSets if there are any, otherwise the inferred ones (possibly none).
pub fn effective_pod_sets(
    component: &AppWrapperComponent,
) -> Result<Vec<crate::api::AppWrapperPodSet>, PodSetError> {
    if !component.declared_pod_sets.is_empty() {
        return Ok(component.declared_pod_sets.clone());
    }
    decode_template(&component.template)?;
    infer_pod_sets(&component.template)
}

/// A fresh `status.componentStatus`: one entry per component with its effective PodSets,
/// empty name/kind/apiVersion and no conditions.
pub fn initial_component_status(
    spec: &AppWrapperSpec,
) -> Result<Vec<AppWrapperComponentStatus>, PodSetError> {
    spec.components
        .iter()
        .map(|component| {
            Ok(AppWrapperComponentStatus {
                pod_sets: effective_pod_sets(component)?,
                ..Default::default()
            })
        })
        .collect()
}

/// Whether `status.componentStatus` parallels `spec.components` (the initialization test).
pub fn component_status_initialized(aw: &AppWrapper) -> bool {
    let stored = aw.status.as_ref().map_or(0, |s| s.component_status.len());
    stored == aw.spec.components.len()
}

/// The stored componentStatus when initialized, otherwise one computed in memory.
pub fn component_status(
    aw: &AppWrapper,
) -> Result<Cow<'_, [AppWrapperComponentStatus]>, PodSetError> {
    match aw.status.as_ref() {
        Some(status) if component_status_initialized(aw) => {
            Ok(Cow::Borrowed(&status.component_status))
        }
        _ if aw.spec.components.is_empty() => Ok(Cow::Borrowed(&[])),
        _ => initial_component_status(&aw.spec).map(Cow::Owned),
    }
}

/// Sum of the replicas (absent means 1) of every effective PodSet, with int32 wrap-around.
pub fn count_expected_pods(component_status: &[AppWrapperComponentStatus]) -> i32 {
    component_status
        .iter()
        .flat_map(|c| &c.pod_sets)
        .fold(0i32, |sum, pod_set| sum.wrapping_add(replicas(pod_set)))
}

/// Expected pod count of an AppWrapper (§3.2), initializing componentStatus in memory if needed.
pub fn expected_pods(aw: &AppWrapper) -> Result<i32, PodSetError> {
    component_status(aw).map(|status| count_expected_pods(&status))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::api::{AppWrapperPodSet, AppWrapperStatus};

    fn job(parallelism: i64) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": parallelism, "template": {
            "spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}
        }}})
    }

    fn component(template: Value, declared: Vec<AppWrapperPodSet>) -> AppWrapperComponent {
        AppWrapperComponent {
            template,
            declared_pod_sets: declared,
            ..Default::default()
        }
    }

    fn ps(path: &str, replicas: Option<i32>) -> AppWrapperPodSet {
        AppWrapperPodSet {
            path: path.to_string(),
            replicas,
            ..Default::default()
        }
    }

    fn aw(components: Vec<AppWrapperComponent>, status: Option<AppWrapperStatus>) -> AppWrapper {
        let mut aw = AppWrapper::new(
            "aw",
            AppWrapperSpec {
                components,
                ..Default::default()
            },
        );
        aw.status = status;
        aw
    }

    #[test]
    fn declared_pod_sets_win_entirely() {
        let declared = vec![ps("template.spec.template", Some(3))];
        let got = effective_pod_sets(&component(job(3), declared.clone()));
        assert_eq!(got, Ok(declared));
    }

    #[test]
    fn inferred_pod_sets_are_used_without_declarations() {
        let got = effective_pod_sets(&component(job(2), vec![]))
            .map(|p| p.iter().map(|p| p.replicas).collect::<Vec<_>>());
        assert_eq!(got, Ok(vec![Some(2)]));
    }

    #[test]
    fn unknown_kinds_without_declarations_have_no_pod_sets() {
        let got = effective_pod_sets(&component(
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            vec![],
        ));
        assert_eq!(got, Ok(vec![]));
    }

    #[test]
    fn decode_errors_are_returned() {
        let got = effective_pod_sets(&component(json!({"apiVersion": "v1"}), vec![]));
        assert!(matches!(got, Err(PodSetError::Template(_))));
    }

    #[test]
    fn initial_status_has_one_blank_entry_per_component() {
        let spec = AppWrapperSpec {
            components: vec![
                component(job(2), vec![]),
                component(json!({"apiVersion": "v1", "kind": "Service"}), vec![]),
            ],
            ..Default::default()
        };
        let status = initial_component_status(&spec).unwrap_or_default();
        assert_eq!(status.len(), 2);
        assert_eq!(status[0].pod_sets.len(), 1);
        assert!(status[1].pod_sets.is_empty());
        assert!(status.iter().all(|s| s.name.is_empty()
            && s.kind.is_empty()
            && s.api_version.is_empty()
            && s.conditions.is_empty()));
    }

    #[test]
    fn expected_pods_sums_replicas_with_default_one() {
        let aw = aw(
            vec![
                component(job(2), vec![]),
                component(
                    json!({"apiVersion": "example.com/v1", "kind": "X"}),
                    vec![ps("template.a", None), ps("template.b", Some(5))],
                ),
                component(json!({"apiVersion": "v1", "kind": "Service"}), vec![]),
            ],
            None,
        );
        assert_eq!(expected_pods(&aw), Ok(8));
    }

    #[test]
    fn expected_pods_uses_frozen_status_when_initialized() {
        let frozen = AppWrapperStatus {
            component_status: vec![AppWrapperComponentStatus {
                pod_sets: vec![ps("template.spec.template", Some(7))],
                ..Default::default()
            }],
            ..Default::default()
        };
        let aw = aw(vec![component(job(2), vec![])], Some(frozen));
        assert!(component_status_initialized(&aw));
        assert_eq!(expected_pods(&aw), Ok(7));
    }

    #[test]
    fn expected_pods_recomputes_when_status_does_not_parallel_spec() {
        let stale = AppWrapperStatus {
            component_status: vec![],
            ..Default::default()
        };
        let aw = aw(vec![component(job(4), vec![])], Some(stale));
        assert!(!component_status_initialized(&aw));
        assert_eq!(expected_pods(&aw), Ok(4));
    }

    #[test]
    fn no_components_means_zero_pods() {
        assert_eq!(expected_pods(&aw(vec![], None)), Ok(0));
    }
}
