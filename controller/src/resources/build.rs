//! Building the object to create for component *i* (§4.2–4.5).

use kube::ResourceExt;
use serde_json::{Map, Value, json};

use super::autopilot::{AutopilotAntiAffinity, inject_anti_affinity};
use super::build_error::BuildError;
use super::inject::inject_pod_set_info;
use super::maps::{StringMap, merge_keep_first, to_json_map};
use super::owner::{controller_reference, set_controller_reference};
use crate::api::{API_VERSION, APPWRAPPER_LABEL, AppWrapper, AppWrapperPodSetInfo, KIND};
use crate::podsets::{self, TemplateError, decode_template};

/// Controller configuration that shapes the built objects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuildOptions {
    /// Config `schedulerName`: set on pod templates that name no scheduler; empty = none.
    pub scheduler_name: String,
    /// `Some` iff config `autopilot` is present and `injectAntiAffinities` is true.
    pub autopilot: Option<AutopilotAntiAffinity>,
}

/// The object to create for `aw.spec.components[index]`: the template with namespace, labels,
/// per-PodSet injections and the controller owner reference. PodSets come from
/// `status.componentStatus[index]` when initialized, otherwise they are computed in memory.
pub fn build_component(
    aw: &AppWrapper,
    index: usize,
    opts: &BuildOptions,
) -> Result<Value, BuildError> {
    let count = aw.spec.components.len();
    let component = aw
        .spec
        .components
        .get(index)
        .ok_or(BuildError::NoSuchComponent { index, count })?;
    let name = identity(aw.metadata.name.as_deref(), "metadata.name")?;
    let namespace = identity(aw.metadata.namespace.as_deref(), "metadata.namespace")?;
    let uid = identity(aw.uid().as_deref(), "metadata.uid")?.to_string();
    let status = podsets::component_status(aw).map_err(BuildError::PodSets)?;
    let pod_sets = status
        .get(index)
        .map(|s| s.pod_sets.as_slice())
        .unwrap_or_default();

    let mut object = component.template.clone();
    decode_template(&object)?;
    {
        let metadata = top_metadata(&mut object)?;
        set_namespace(metadata, namespace)?;
        label_top_level(metadata, name);
    }

    let no_info = AppWrapperPodSetInfo::default();
    for (k, pod_set) in pod_sets.iter().enumerate() {
        let info = component.pod_set_infos.get(k).unwrap_or(&no_info);
        let template = podsets::path::resolve_map_mut(&mut object, &pod_set.path)?;
        let spec = inject_pod_set_info(template, &pod_set.path, info, name, &opts.scheduler_name)?;
        if let Some(autopilot) = &opts.autopilot
            && let Err(err) = inject_anti_affinity(spec, autopilot)
        {
            tracing::warn!(appwrapper = name, path = %pod_set.path, %err, "failed to inject Autopilot affinities");
        }
    }

    let owner = controller_reference(API_VERSION, KIND, name, &uid);
    set_controller_reference(top_metadata(&mut object)?, owner)?;
    Ok(object)
}

fn identity<'a>(value: Option<&'a str>, what: &'static str) -> Result<&'a str, BuildError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or(BuildError::MissingIdentity(what))
}

fn top_metadata(object: &mut Value) -> Result<&mut Map<String, Value>, BuildError> {
    let not_a_map = || BuildError::MetadataNotAMap {
        path: podsets::path::ROOT.to_string(),
    };
    let object = object
        .as_object_mut()
        .ok_or(BuildError::Decode(TemplateError::NotAnObject))?;
    let metadata = object.entry("metadata").or_insert_with(|| json!({}));
    if metadata.is_null() {
        *metadata = json!({});
    }
    metadata.as_object_mut().ok_or_else(not_a_map)
}

fn set_namespace(metadata: &mut Map<String, Value>, aw_namespace: &str) -> Result<(), BuildError> {
    let namespace = metadata
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if namespace.is_empty() {
        metadata.insert("namespace".to_string(), json!(aw_namespace));
        Ok(())
    } else if namespace == aw_namespace {
        Ok(())
    } else {
        Err(BuildError::NamespaceMismatch {
            namespace: namespace.to_string(),
            aw_namespace: aw_namespace.to_string(),
        })
    }
}

/// Top-level labels keep a conflicting pre-existing AppWrapper label silently (§11.1 item 10).
/// Labels with non-string values are unreadable to the reference and are replaced.
fn label_top_level(metadata: &mut Map<String, Value>, aw_name: &str) {
    let existing: StringMap = match metadata.get("labels") {
        Some(Value::Object(labels)) => labels
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect::<Option<StringMap>>()
            .unwrap_or_default(),
        _ => StringMap::new(),
    };
    let ours = StringMap::from([(APPWRAPPER_LABEL.to_string(), aw_name.to_string())]);
    metadata.insert(
        "labels".to_string(),
        to_json_map(&merge_keep_first(&existing, &ours)),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{Taint, Toleration};
    use rstest::rstest;

    use super::*;
    use crate::api::{
        AppWrapperComponent, AppWrapperComponentStatus, AppWrapperPodSet, AppWrapperSpec,
        AppWrapperStatus,
    };

    fn pod_template() -> Value {
        json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
            "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})
    }

    fn job() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
            "spec": {"parallelism": 2, "template": pod_template()}})
    }

    fn appwrapper(components: Vec<AppWrapperComponent>) -> AppWrapper {
        let mut aw = AppWrapper::new(
            "my-aw",
            AppWrapperSpec {
                components,
                ..Default::default()
            },
        );
        aw.metadata.namespace = Some("team".into());
        aw.metadata.uid = Some("0000-1111".into());
        aw
    }

    fn component(template: Value) -> AppWrapperComponent {
        AppWrapperComponent {
            template,
            ..Default::default()
        }
    }

    fn build(aw: &AppWrapper) -> Result<Value, BuildError> {
        build_component(aw, 0, &BuildOptions::default())
    }

    #[test]
    fn sets_namespace_labels_and_owner_reference() {
        let built = build(&appwrapper(vec![component(job())])).unwrap_or_default();
        assert_eq!(built["metadata"]["namespace"], json!("team"));
        assert_eq!(
            built["metadata"]["labels"],
            json!({APPWRAPPER_LABEL: "my-aw"})
        );
        assert_eq!(
            built["metadata"]["ownerReferences"],
            json!([{"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "my-aw",
                "uid": "0000-1111", "controller": true, "blockOwnerDeletion": true}])
        );
        assert_eq!(
            built["spec"]["template"]["metadata"]["labels"],
            json!({APPWRAPPER_LABEL: "my-aw"})
        );
        assert_eq!(built["spec"]["parallelism"], json!(2));
        assert_eq!(built["metadata"]["name"], json!("job"));
    }

    #[test]
    fn the_template_in_the_spec_is_not_modified() {
        let aw = appwrapper(vec![component(job())]);
        let _ = build(&aw);
        assert_eq!(aw.spec.components[0].template, job());
    }

    #[test]
    fn a_conflicting_top_level_label_is_kept_silently() {
        let mut template = job();
        template["metadata"]["labels"] = json!({APPWRAPPER_LABEL: "someone-else", "app": "x"});
        let built = build(&appwrapper(vec![component(template)])).unwrap_or_default();
        assert_eq!(
            built["metadata"]["labels"],
            json!({APPWRAPPER_LABEL: "someone-else", "app": "x"})
        );
    }

    #[test]
    fn the_same_conflict_in_a_pod_template_is_fatal() {
        let mut template = job();
        template["spec"]["template"]["metadata"] =
            json!({"labels": {APPWRAPPER_LABEL: "someone-else"}});
        let err = build(&appwrapper(vec![component(template)]));
        assert!(
            matches!(&err, Err(e @ BuildError::Conflict { field: "labels", .. }) if e.is_fatal())
        );
    }

    #[rstest]
    #[case::same(json!("team"), Some("team"))]
    #[case::empty(json!(""), Some("team"))]
    #[case::not_a_string(json!(7), Some("team"))]
    fn namespace_is_defaulted(#[case] namespace: Value, #[case] expected: Option<&str>) {
        let mut template = job();
        template["metadata"]["namespace"] = namespace;
        let built = build(&appwrapper(vec![component(template)])).unwrap_or_default();
        assert_eq!(built["metadata"]["namespace"].as_str(), expected);
    }

    #[test]
    fn another_namespace_is_fatal() {
        let mut template = job();
        template["metadata"]["namespace"] = json!("elsewhere");
        let err = build(&appwrapper(vec![component(template)]));
        assert_eq!(
            err.as_ref().err().map(ToString::to_string).as_deref(),
            Some(
                "component namespace \"elsewhere\" is different from appwrapper namespace \"team\""
            )
        );
        assert!(err.is_err_and(|e| e.is_fatal()));
    }

    #[test]
    fn pod_set_infos_are_applied_in_pod_set_order() {
        let template = json!({"apiVersion": "example.com/v1", "kind": "Pair", "metadata": {"name": "p"},
            "spec": {"a": pod_template(), "b": pod_template()}});
        let info = |flavor: &str| AppWrapperPodSetInfo {
            node_selector: BTreeMap::from([("flavor".to_string(), flavor.to_string())]),
            tolerations: vec![Toleration {
                key: Some(flavor.to_string()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ps = |path: &str| AppWrapperPodSet {
            path: path.to_string(),
            ..Default::default()
        };
        let mut c = component(template);
        c.declared_pod_sets = vec![ps("template.spec.b"), ps("template.spec.a")];
        c.pod_set_infos = vec![info("first")];
        let built = build(&appwrapper(vec![c])).unwrap_or_default();
        assert_eq!(
            built["spec"]["b"]["spec"]["nodeSelector"],
            json!({"flavor": "first"})
        );
        assert_eq!(
            built["spec"]["b"]["spec"]["tolerations"],
            json!([{"key": "first"}])
        );
        assert!(built["spec"]["a"]["spec"].get("nodeSelector").is_none());
        assert_eq!(
            built["spec"]["a"]["metadata"]["labels"],
            json!({APPWRAPPER_LABEL: "my-aw"})
        );
    }

    #[test]
    fn frozen_status_pod_sets_win_over_the_spec() {
        let mut aw = appwrapper(vec![component(job())]);
        aw.status = Some(AppWrapperStatus {
            component_status: vec![AppWrapperComponentStatus::default()],
            ..Default::default()
        });
        let built = build(&aw).unwrap_or_default();
        assert!(built["spec"]["template"].get("metadata").is_none());
    }

    #[test]
    fn a_bad_frozen_path_is_fatal() {
        let mut aw = appwrapper(vec![component(job())]);
        aw.status = Some(AppWrapperStatus {
            component_status: vec![AppWrapperComponentStatus {
                pod_sets: vec![AppWrapperPodSet {
                    path: "template.spec.nothing".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        let err = build(&aw);
        assert!(matches!(&err, Err(e @ BuildError::Path(_)) if e.is_fatal()));
    }

    #[test]
    fn failing_in_memory_inference_is_retryable() {
        let bad = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {}});
        let err = build(&appwrapper(vec![component(bad)]));
        assert!(matches!(&err, Err(e @ BuildError::PodSets(_)) if !e.is_fatal()));
    }

    #[test]
    fn scheduler_name_and_autopilot_come_from_options() {
        let opts = BuildOptions {
            scheduler_name: "custom-scheduler".into(),
            autopilot: Some(AutopilotAntiAffinity {
                resource_taints: BTreeMap::from([(
                    "nvidia.com/gpu".to_string(),
                    vec![Taint {
                        key: "autopilot.ibm.com/gpuhealth".into(),
                        value: Some("EVICT".into()),
                        effect: "NoExecute".into(),
                        ..Default::default()
                    }],
                )]),
                prefer_no_schedule_weight: Some(50),
            }),
        };
        let built =
            build_component(&appwrapper(vec![component(job())]), 0, &opts).unwrap_or_default();
        let spec = &built["spec"]["template"]["spec"];
        assert_eq!(spec["schedulerName"], json!("custom-scheduler"));
        assert_eq!(
            spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
            json!([{"matchExpressions": [{"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["EVICT"]}]}])
        );
    }

    #[test]
    fn an_affinity_structure_problem_is_skipped_not_fatal() {
        let mut template = job();
        template["spec"]["template"]["spec"]["affinity"] = json!("bogus");
        let opts = BuildOptions {
            autopilot: Some(AutopilotAntiAffinity {
                resource_taints: BTreeMap::from([(
                    "nvidia.com/gpu".to_string(),
                    vec![Taint {
                        key: "k".into(),
                        effect: "NoSchedule".into(),
                        ..Default::default()
                    }],
                )]),
                prefer_no_schedule_weight: None,
            }),
            ..Default::default()
        };
        let mut c = component(template);
        c.declared_pod_sets = vec![AppWrapperPodSet {
            path: "template.spec.template".into(),
            replicas: Some(2),
            ..Default::default()
        }];
        let built = build_component(&appwrapper(vec![c]), 0, &opts);
        assert_eq!(
            built.map(|b| b["spec"]["template"]["spec"]["affinity"].clone()),
            Ok(json!("bogus"))
        );
    }

    #[rstest]
    #[case::foreign_controller(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]},
            "spec": {"containers": []}}),
        "Object team/p is already owned by another ReplicaSet controller rs", true)]
    #[case::missing_kind(json!({"apiVersion": "v1", "metadata": {"name": "p"}}), "", true)]
    #[case::no_spec(json!({"apiVersion": "example.com/v1", "kind": "X", "spec": {"t": {"metadata": {}}}}),
        "content at template.spec.t does not contain a spec", true)]
    fn fatal_template_problems(
        #[case] template: Value,
        #[case] message: &str,
        #[case] fatal: bool,
    ) {
        let mut c = component(template);
        if c.template["kind"] == json!("X") {
            c.declared_pod_sets = vec![AppWrapperPodSet {
                path: "template.spec.t".into(),
                ..Default::default()
            }];
        }
        let mut aw = appwrapper(vec![c]);
        aw.status = Some(AppWrapperStatus {
            component_status: vec![AppWrapperComponentStatus {
                pod_sets: aw.spec.components[0].declared_pod_sets.clone(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let err = build(&aw);
        assert_eq!(err.as_ref().err().map(BuildError::is_fatal), Some(fatal));
        if !message.is_empty() {
            assert_eq!(err.map_err(|e| e.to_string()), Err(message.to_string()));
        }
    }

    #[rstest]
    #[case::no_uid(|aw: &mut AppWrapper| aw.metadata.uid = None)]
    #[case::no_namespace(|aw: &mut AppWrapper| aw.metadata.namespace = None)]
    fn missing_identity_is_retryable(#[case] strip: fn(&mut AppWrapper)) {
        let mut aw = appwrapper(vec![component(job())]);
        strip(&mut aw);
        assert!(matches!(build(&aw), Err(e @ BuildError::MissingIdentity(_)) if !e.is_fatal()));
    }

    #[test]
    fn out_of_range_index_is_an_error() {
        let aw = appwrapper(vec![component(job())]);
        assert_eq!(
            build_component(&aw, 1, &BuildOptions::default()),
            Err(BuildError::NoSuchComponent { index: 1, count: 1 })
        );
    }
}
