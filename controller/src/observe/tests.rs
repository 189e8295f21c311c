use super::*;
use serde_json::json;

fn node(labels: serde_json::Value, deleting: bool) -> Node {
    let mut meta = json!({"name": "n", "labels": labels});
    if deleting {
        meta["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    }
    serde_json::from_value(json!({"metadata": meta})).unwrap()
}

#[test]
fn no_execute_resources_match_labels_of_no_execute_taints() {
    let autopilot = AutopilotConfig::default();
    let evict = node(json!({"autopilot.ibm.com/gpuhealth": "EVICT"}), false);
    assert_eq!(
        no_execute_resources(&evict, &autopilot),
        BTreeSet::from(["nvidia.com/gpu".to_owned()])
    );
    for value in ["WARN", "TESTING", "OK"] {
        let n = node(json!({"autopilot.ibm.com/gpuhealth": value}), false);
        assert!(no_execute_resources(&n, &autopilot).is_empty(), "{value}");
    }
    let deleted = node(json!({"autopilot.ibm.com/gpuhealth": "EVICT"}), true);
    assert!(no_execute_resources(&deleted, &autopilot).is_empty());
}

#[test]
fn build_options_follow_config() {
    let mut config = Config::default();
    config.appwrapper.scheduler_name = "sched".into();
    let opts = build_options(&config);
    assert_eq!(opts.scheduler_name, "sched");
    let autopilot = opts.autopilot.unwrap();
    assert_eq!(autopilot.prefer_no_schedule_weight, Some(50));
    assert_eq!(autopilot.resource_taints["nvidia.com/gpu"].len(), 3);

    config
        .appwrapper
        .autopilot
        .as_mut()
        .unwrap()
        .inject_anti_affinities = false;
    assert!(build_options(&config).autopilot.is_none());
    config.appwrapper.autopilot = None;
    assert!(build_options(&config).autopilot.is_none());
}
