//! Per-PodSet injection into a pod template (§4.3 steps 1–6; step 7 is [`super::autopilot`]).

use serde_json::{Map, Value, json};

use super::build_error::BuildError;
use super::maps::{StringMap, have_conflict, merge_keep_first, to_json_map, to_string_map};
use crate::api::{APPWRAPPER_LABEL, AppWrapperPodSetInfo};

/// Applies `info` and the AppWrapper label to the pod template `template` found at `path`
/// (the path is only used in error texts), and returns its pod spec for further injection.
pub fn inject_pod_set_info<'t>(
    template: &'t mut Map<String, Value>,
    path: &str,
    info: &AppWrapperPodSetInfo,
    aw_name: &str,
    scheduler_name: &str,
) -> Result<&'t mut Map<String, Value>, BuildError> {
    if !template.get("spec").is_some_and(Value::is_object) {
        return Err(BuildError::NoSpec {
            path: path.to_string(),
        });
    }
    inject_metadata(metadata(template, path)?, info, aw_name)?;
    let spec = template
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| BuildError::NoSpec {
            path: path.to_string(),
        })?;
    inject_spec(spec, path, info, scheduler_name)?;
    Ok(spec)
}

/// `metadata` of a pod template, created when absent or null.
fn metadata<'t>(
    template: &'t mut Map<String, Value>,
    path: &str,
) -> Result<&'t mut Map<String, Value>, BuildError> {
    let metadata = template.entry("metadata").or_insert_with(|| json!({}));
    if metadata.is_null() {
        *metadata = json!({});
    }
    metadata
        .as_object_mut()
        .ok_or_else(|| BuildError::MetadataNotAMap {
            path: path.to_string(),
        })
}

fn inject_metadata(
    metadata: &mut Map<String, Value>,
    info: &AppWrapperPodSetInfo,
    aw_name: &str,
) -> Result<(), BuildError> {
    if !info.annotations.is_empty() {
        merge_into(metadata, "annotations", &info.annotations)?;
    }
    let aw_label = StringMap::from([(APPWRAPPER_LABEL.to_string(), aw_name.to_string())]);
    merge_into(
        metadata,
        "labels",
        &merge_keep_first(&info.labels, &aw_label),
    )
}

fn inject_spec(
    spec: &mut Map<String, Value>,
    path: &str,
    info: &AppWrapperPodSetInfo,
    scheduler_name: &str,
) -> Result<(), BuildError> {
    if !info.node_selector.is_empty() {
        merge_into(spec, "nodeSelector", &info.node_selector)?;
    }
    if !info.tolerations.is_empty() {
        let tolerations = info
            .tolerations
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or_default());
        list(spec, "tolerations", path)?.extend(tolerations);
    }
    if !info.scheduling_gates.is_empty() {
        let gates = list(spec, "schedulingGates", path)?;
        for gate in &info.scheduling_gates {
            let present = gates
                .iter()
                .any(|g| g.get("name").and_then(Value::as_str) == Some(gate.name.as_str()));
            if !present {
                gates.push(json!({"name": gate.name}));
            }
        }
    }
    let current = spec
        .get("schedulerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !scheduler_name.is_empty() && current.is_empty() {
        spec.insert("schedulerName".to_string(), json!(scheduler_name));
    }
    Ok(())
}

/// `map[field] = MergeKeepFirst(existing, wanted)` unless they conflict.
fn merge_into(
    map: &mut Map<String, Value>,
    field: &'static str,
    wanted: &StringMap,
) -> Result<(), BuildError> {
    let existing = to_string_map(map.get(field));
    have_conflict(&existing, wanted)
        .map_err(|conflict| BuildError::Conflict { field, conflict })?;
    map.insert(
        field.to_string(),
        to_json_map(&merge_keep_first(&existing, wanted)),
    );
    Ok(())
}

/// The list at `spec[field]`, created when absent or null.
fn list<'s>(
    spec: &'s mut Map<String, Value>,
    field: &'static str,
    path: &str,
) -> Result<&'s mut Vec<Value>, BuildError> {
    let value = spec.entry(field).or_insert_with(|| json!([]));
    if value.is_null() {
        *value = json!([]);
    }
    value.as_array_mut().ok_or_else(|| BuildError::NotAList {
        path: path.to_string(),
        field,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSchedulingGate, Toleration};
    use rstest::rstest;

    use super::*;

    fn template(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn strings(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn inject(t: &mut Map<String, Value>, info: &AppWrapperPodSetInfo) -> Result<(), String> {
        inject_pod_set_info(t, "template.spec.template", info, "my-aw", "")
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn labels_every_template_even_without_info() {
        let mut t = template(json!({"spec": {"containers": []}}));
        assert_eq!(inject(&mut t, &AppWrapperPodSetInfo::default()), Ok(()));
        assert_eq!(
            t["metadata"],
            json!({"labels": {"workload.codeflare.dev/appwrapper": "my-aw"}})
        );
        assert_eq!(t["spec"], json!({"containers": []}));
    }

    #[test]
    fn merges_labels_annotations_and_node_selector() {
        let mut t = template(json!({
            "metadata": {"labels": {"app": "x", "n": 5}, "annotations": {"keep": "me"}},
            "spec": {"containers": [], "nodeSelector": {"zone": "a"}}
        }));
        let info = AppWrapperPodSetInfo {
            labels: strings(&[("kueue.x-k8s.io/podset", "main"), ("app", "x")]),
            annotations: strings(&[("kueue.x-k8s.io/workload", "w")]),
            node_selector: strings(&[("flavor", "gpu")]),
            ..Default::default()
        };
        assert_eq!(inject(&mut t, &info), Ok(()));
        assert_eq!(
            t["metadata"]["labels"],
            json!({"app": "x", "n": "5", "kueue.x-k8s.io/podset": "main", "workload.codeflare.dev/appwrapper": "my-aw"})
        );
        assert_eq!(
            t["metadata"]["annotations"],
            json!({"keep": "me", "kueue.x-k8s.io/workload": "w"})
        );
        assert_eq!(
            t["spec"]["nodeSelector"],
            json!({"zone": "a", "flavor": "gpu"})
        );
    }

    #[rstest]
    #[case::annotation(json!({"metadata": {"annotations": {"a": "1"}}, "spec": {}}),
        AppWrapperPodSetInfo { annotations: strings(&[("a", "2")]), ..Default::default() },
        "conflict updating annotations: conflict for key=a, value1=1, value2=2")]
    #[case::label(json!({"metadata": {"labels": {"l": "1"}}, "spec": {}}),
        AppWrapperPodSetInfo { labels: strings(&[("l", "2")]), ..Default::default() },
        "conflict updating labels: conflict for key=l, value1=1, value2=2")]
    #[case::foreign_appwrapper_label(json!({"metadata": {"labels": {"workload.codeflare.dev/appwrapper": "other"}}, "spec": {}}),
        AppWrapperPodSetInfo::default(),
        "conflict updating labels: conflict for key=workload.codeflare.dev/appwrapper, value1=other, value2=my-aw")]
    #[case::node_selector(json!({"spec": {"nodeSelector": {"zone": "a"}}}),
        AppWrapperPodSetInfo { node_selector: strings(&[("zone", "b")]), ..Default::default() },
        "conflict updating nodeSelector: conflict for key=zone, value1=a, value2=b")]
    #[case::stringified_value(json!({"metadata": {"annotations": {"n": 1}}, "spec": {}}),
        AppWrapperPodSetInfo { annotations: strings(&[("n", "2")]), ..Default::default() },
        "conflict updating annotations: conflict for key=n, value1=1, value2=2")]
    #[case::no_spec(json!({"metadata": {}}), AppWrapperPodSetInfo::default(),
        "content at template.spec.template does not contain a spec")]
    #[case::metadata_not_a_map(json!({"metadata": "x", "spec": {}}), AppWrapperPodSetInfo::default(),
        "content at template.spec.template has metadata that is not a map")]
    #[case::tolerations_not_a_list(json!({"spec": {"tolerations": "x"}}),
        AppWrapperPodSetInfo { tolerations: vec![Toleration::default()], ..Default::default() },
        "content at template.spec.template has spec.tolerations that is not a list")]
    fn conflicts_and_malformed_templates_fail(
        #[case] t: Value,
        #[case] info: AppWrapperPodSetInfo,
        #[case] message: &str,
    ) {
        assert_eq!(inject(&mut template(t), &info), Err(message.to_string()));
    }

    #[test]
    fn info_labels_win_over_the_appwrapper_label_before_the_conflict_check() {
        let mut t = template(json!({"spec": {}}));
        let info = AppWrapperPodSetInfo {
            labels: strings(&[(APPWRAPPER_LABEL, "from-kueue")]),
            ..Default::default()
        };
        assert_eq!(inject(&mut t, &info), Ok(()));
        assert_eq!(
            t["metadata"]["labels"][APPWRAPPER_LABEL],
            json!("from-kueue")
        );
    }

    #[test]
    fn tolerations_are_appended_without_deduplication() {
        let existing = json!({"key": "a", "operator": "Exists"});
        let mut t = template(json!({"spec": {"tolerations": [existing.clone()]}}));
        let toleration = Toleration {
            key: Some("a".into()),
            operator: Some("Exists".into()),
            ..Default::default()
        };
        let info = AppWrapperPodSetInfo {
            tolerations: vec![toleration.clone(), toleration],
            ..Default::default()
        };
        assert_eq!(inject(&mut t, &info), Ok(()));
        assert_eq!(
            t["spec"]["tolerations"],
            json!([existing.clone(), existing.clone(), existing])
        );
    }

    #[test]
    fn scheduling_gates_are_deduplicated_by_name() {
        let mut t =
            template(json!({"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/topology"}]}}));
        let gate = |name: &str| PodSchedulingGate {
            name: name.to_string(),
        };
        let info = AppWrapperPodSetInfo {
            scheduling_gates: vec![gate("kueue.x-k8s.io/topology"), gate("g2"), gate("g2")],
            ..Default::default()
        };
        assert_eq!(inject(&mut t, &info), Ok(()));
        assert_eq!(
            t["spec"]["schedulingGates"],
            json!([{"name": "kueue.x-k8s.io/topology"}, {"name": "g2"}])
        );
    }

    #[rstest]
    #[case::absent(json!({}), "custom", Some("custom"))]
    #[case::empty(json!({"schedulerName": ""}), "custom", Some("custom"))]
    #[case::user_choice_kept(json!({"schedulerName": "mine"}), "custom", Some("mine"))]
    #[case::not_configured(json!({}), "", None)]
    fn scheduler_name_only_fills_blanks(
        #[case] spec: Value,
        #[case] configured: &str,
        #[case] expected: Option<&str>,
    ) {
        let mut t = template(json!({"spec": spec}));
        let result = inject_pod_set_info(
            &mut t,
            "template",
            &AppWrapperPodSetInfo::default(),
            "aw",
            configured,
        );
        assert!(result.is_ok());
        assert_eq!(
            t["spec"].get("schedulerName").and_then(Value::as_str),
            expected
        );
    }
}
