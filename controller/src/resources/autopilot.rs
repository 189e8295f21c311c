//! Autopilot node anti-affinity injection (§4.5): keep pods that request a monitored resource
//! off nodes whose health label carries one of the configured taint values.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use serde_json::{Map, Value, json};

use crate::quantity::parse_quantity;

/// What the reconciler passes when config `autopilot` is present and `injectAntiAffinities`
/// is true.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutopilotAntiAffinity {
    /// Resource name (e.g. `nvidia.com/gpu`) to the taints that mark unhealthy nodes.
    pub resource_taints: BTreeMap<String, Vec<Taint>>,
    /// Weight of the preferred term; `None` means 1 (the config file defaults it to 50).
    pub prefer_no_schedule_weight: Option<i32>,
}

/// A structural problem in the pod spec; the reference logs it and skips the injection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AffinityError(String);

/// Values per node-label key, keys in sorted order, values in configuration order.
type Exclusions = BTreeMap<String, Vec<String>>;

/// Adds `NotIn` node-affinity expressions to `pod_spec` for every configured resource the pod
/// requests. Nothing is created when nothing is to be added.
pub fn inject_anti_affinity(
    pod_spec: &mut Map<String, Value>,
    settings: &AutopilotAntiAffinity,
) -> Result<(), AffinityError> {
    let mut required = Exclusions::new();
    let mut preferred = Exclusions::new();
    for (resource, taints) in &settings.resource_taints {
        if !requests_resource(pod_spec, resource) {
            continue;
        }
        for taint in taints {
            let target = match taint.effect.as_str() {
                "NoExecute" | "NoSchedule" => &mut required,
                "PreferNoSchedule" => &mut preferred,
                _ => continue,
            };
            target
                .entry(taint.key.clone())
                .or_default()
                .push(taint.value.clone().unwrap_or_default());
        }
    }
    if !required.is_empty() {
        add_required(pod_spec, &not_in(&required))?;
    }
    if !preferred.is_empty() {
        let weight = settings.prefer_no_schedule_weight.unwrap_or(1);
        add_preferred(pod_spec, &not_in(&preferred), weight)?;
    }
    Ok(())
}

fn not_in(exclusions: &Exclusions) -> Vec<Value> {
    exclusions
        .iter()
        .map(|(key, values)| json!({"key": key, "operator": "NotIn", "values": values}))
        .collect()
}

/// Some container or init container has a positive integer or a non-zero quantity string as
/// limit or request for `resource` (floats are not recognised).
pub fn requests_resource(pod_spec: &Map<String, Value>, resource: &str) -> bool {
    let amount_positive = |amount: &Value| match amount {
        Value::Number(n) => n.as_i64().is_some_and(|i| i > 0),
        Value::String(s) => parse_quantity(s).is_ok_and(|q| !q.is_zero()),
        _ => false,
    };
    let uses = |container: &Value| {
        ["limits", "requests"].iter().any(|list| {
            container
                .get("resources")
                .and_then(|r| r.get(list))
                .and_then(|l| l.get(resource))
                .is_some_and(amount_positive)
        })
    };
    ["containers", "initContainers"].iter().any(|key| {
        pod_spec
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|containers| containers.iter().any(uses))
    })
}

/// Gets `map[key]`, inserting `default` when the key is absent; fails when the value is not
/// of the same JSON type as `default`. Present-but-null counts as the wrong type.
fn child<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
    default: Value,
    what: &str,
) -> Result<&'m mut Value, AffinityError> {
    let want_array = default.is_array();
    let value = map.entry(key).or_insert(default);
    if value.is_array() == want_array && (value.is_array() || value.is_object()) {
        Ok(value)
    } else {
        let kind = if want_array { "an array" } else { "a map" };
        Err(AffinityError(format!("{what} is not {kind}")))
    }
}

fn node_affinity(
    pod_spec: &mut Map<String, Value>,
) -> Result<&mut Map<String, Value>, AffinityError> {
    let affinity = child(pod_spec, "affinity", json!({}), "spec.affinity")?;
    let affinity = affinity
        .as_object_mut()
        .ok_or_else(|| AffinityError("spec.affinity is not a map".into()))?;
    child(
        affinity,
        "nodeAffinity",
        json!({}),
        "spec.affinity.nodeAffinity",
    )?
    .as_object_mut()
    .ok_or_else(|| AffinityError("spec.affinity.nodeAffinity is not a map".into()))
}

fn add_required(
    pod_spec: &mut Map<String, Value>,
    expressions: &[Value],
) -> Result<(), AffinityError> {
    const REQUIRED: &str =
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution";
    let node_affinity = node_affinity(pod_spec)?;
    let selector = child(
        node_affinity,
        "requiredDuringSchedulingIgnoredDuringExecution",
        json!({}),
        REQUIRED,
    )?
    .as_object_mut()
    .ok_or_else(|| AffinityError(format!("{REQUIRED} is not a map")))?;
    let terms = child(
        selector,
        "nodeSelectorTerms",
        json!([{}]),
        &format!("{REQUIRED}.nodeSelectorTerms"),
    )?
    .as_array_mut()
    .ok_or_else(|| AffinityError(format!("{REQUIRED}.nodeSelectorTerms is not an array")))?;
    for (i, term) in terms.iter_mut().enumerate() {
        let what = format!("{REQUIRED}.nodeSelectorTerms[{i}]");
        let term = term
            .as_object_mut()
            .ok_or_else(|| AffinityError(format!("{what} is not a map")))?;
        child(
            term,
            "matchExpressions",
            json!([]),
            &format!("{what}.matchExpressions"),
        )?
        .as_array_mut()
        .ok_or_else(|| AffinityError(format!("{what}.matchExpressions is not an array")))?
        .extend(expressions.iter().cloned());
    }
    Ok(())
}

fn add_preferred(
    pod_spec: &mut Map<String, Value>,
    expressions: &[Value],
    weight: i32,
) -> Result<(), AffinityError> {
    const PREFERRED: &str =
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";
    let node_affinity = node_affinity(pod_spec)?;
    child(
        node_affinity,
        "preferredDuringSchedulingIgnoredDuringExecution",
        json!([]),
        PREFERRED,
    )?
    .as_array_mut()
    .ok_or_else(|| AffinityError(format!("{PREFERRED} is not an array")))?
    .push(json!({"weight": weight, "preference": {"matchExpressions": expressions}}));
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.to_string(),
            value: Some(value.to_string()),
            effect: effect.to_string(),
            ..Default::default()
        }
    }

    /// The reference's default configuration.
    fn defaults() -> AutopilotAntiAffinity {
        AutopilotAntiAffinity {
            resource_taints: BTreeMap::from([(
                "nvidia.com/gpu".to_string(),
                vec![
                    taint("autopilot.ibm.com/gpuhealth", "WARN", "PreferNoSchedule"),
                    taint("autopilot.ibm.com/gpuhealth", "TESTING", "NoSchedule"),
                    taint("autopilot.ibm.com/gpuhealth", "EVICT", "NoExecute"),
                ],
            )]),
            prefer_no_schedule_weight: Some(50),
        }
    }

    fn spec(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn gpu_pod() -> Map<String, Value> {
        spec(json!({"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}))
    }

    #[test]
    fn default_config_excludes_testing_and_evict_and_prefers_not_warn() {
        let mut pod = gpu_pod();
        assert_eq!(inject_anti_affinity(&mut pod, &defaults()), Ok(()));
        assert_eq!(
            pod["affinity"],
            json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["TESTING", "EVICT"]}
                ]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "preference": {"matchExpressions": [
                    {"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["WARN"]}
                ]}}]
            }})
        );
    }

    #[test]
    fn unset_weight_means_one() {
        let mut pod = gpu_pod();
        let settings = AutopilotAntiAffinity {
            prefer_no_schedule_weight: None,
            ..defaults()
        };
        assert_eq!(inject_anti_affinity(&mut pod, &settings), Ok(()));
        assert_eq!(
            pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            json!(1)
        );
    }

    #[test]
    fn appends_to_every_existing_term_and_keeps_existing_entries() {
        let mut pod = gpu_pod();
        pod.insert(
            "affinity".into(),
            json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {}}]
            }}),
        );
        assert_eq!(inject_anti_affinity(&mut pod, &defaults()), Ok(()));
        let node_affinity = &pod["affinity"]["nodeAffinity"];
        let terms =
            &node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        let excluded = json!({"key": "autopilot.ibm.com/gpuhealth", "operator": "NotIn", "values": ["TESTING", "EVICT"]});
        assert_eq!(
            terms[0]["matchExpressions"],
            json!([{"key": "zone", "operator": "In", "values": ["a"]}, excluded.clone()])
        );
        assert_eq!(terms[1]["matchExpressions"], json!([excluded]));
        assert_eq!(terms[1]["matchFields"][0]["key"], json!("metadata.name"));
        let preferred = node_affinity["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .map(Vec::len);
        assert_eq!(preferred, Some(2));
    }

    #[rstest]
    #[case::no_request(json!({"containers": [{"name": "c"}]}))]
    #[case::zero_int(json!({"containers": [{"resources": {"requests": {"nvidia.com/gpu": 0}}}]}))]
    #[case::zero_string(json!({"containers": [{"resources": {"requests": {"nvidia.com/gpu": "0"}}}]}))]
    #[case::float_not_recognised(json!({"containers": [{"resources": {"requests": {"nvidia.com/gpu": 1.0}}}]}))]
    #[case::malformed_string(json!({"containers": [{"resources": {"requests": {"nvidia.com/gpu": "one"}}}]}))]
    #[case::other_resource(json!({"containers": [{"resources": {"limits": {"cpu": 4}}}]}))]
    #[case::containers_not_a_list(json!({"containers": {"resources": {"limits": {"nvidia.com/gpu": 1}}}}))]
    fn nothing_is_created_when_nothing_is_requested(#[case] pod: Value) {
        let mut pod = spec(pod);
        let before = pod.clone();
        assert_eq!(inject_anti_affinity(&mut pod, &defaults()), Ok(()));
        assert_eq!(pod, before);
    }

    #[rstest]
    #[case::int_limit(json!({"containers": [{"resources": {"limits": {"nvidia.com/gpu": 2}}}]}))]
    #[case::string_request(json!({"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]}))]
    #[case::init_container(json!({"containers": [], "initContainers": [{"resources": {"requests": {"nvidia.com/gpu": "500m"}}}]}))]
    fn recognises_requests(#[case] pod: Value) {
        assert!(requests_resource(&spec(pod), "nvidia.com/gpu"));
    }

    #[rstest]
    #[case::affinity_not_a_map(json!("x"), "spec.affinity is not a map")]
    #[case::affinity_null(json!(null), "spec.affinity is not a map")]
    #[case::terms_not_a_list(json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": {}}}}),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms is not an array")]
    #[case::term_not_a_map(json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [3]}}}),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0] is not a map")]
    fn structural_problems_are_reported(#[case] affinity: Value, #[case] message: &str) {
        let mut pod = gpu_pod();
        pod.insert("affinity".into(), affinity);
        assert_eq!(
            inject_anti_affinity(&mut pod, &defaults()).map_err(|e| e.to_string()),
            Err(message.to_string())
        );
    }

    #[test]
    fn keys_and_values_accumulate_across_resources() {
        let settings = AutopilotAntiAffinity {
            resource_taints: BTreeMap::from([
                (
                    "cpu".to_string(),
                    vec![taint("health", "BAD", "NoSchedule")],
                ),
                (
                    "nvidia.com/gpu".to_string(),
                    vec![
                        taint("health", "EVICT", "NoExecute"),
                        taint("other", "X", "NoSchedule"),
                    ],
                ),
            ]),
            prefer_no_schedule_weight: None,
        };
        let mut pod = spec(
            json!({"containers": [{"resources": {"requests": {"cpu": "1", "nvidia.com/gpu": 1}}}]}),
        );
        assert_eq!(inject_anti_affinity(&mut pod, &settings), Ok(()));
        assert_eq!(
            pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                [0]["matchExpressions"],
            json!([
                {"key": "health", "operator": "NotIn", "values": ["BAD", "EVICT"]},
                {"key": "other", "operator": "NotIn", "values": ["X"]}
            ])
        );
        assert!(
            pod["affinity"]["nodeAffinity"]
                .get("preferredDuringSchedulingIgnoredDuringExecution")
                .is_none()
        );
    }
}
