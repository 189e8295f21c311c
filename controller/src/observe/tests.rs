use super::*;
use serde_json::json;

fn pod(value: serde_json::Value) -> Pod {
    serde_json::from_value(value).unwrap()
}

#[test]
fn pod_observation_reads_phase_node_exit_codes_and_resources() {
    let p = pod(json!({
        "metadata": {"name": "p0", "deletionTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {
            "nodeName": "node-a",
            "containers": [
                {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "0"}}},
                {"name": "b", "resources": {"requests": {"memory": "1Gi", "example.com/zero": "0m"}}}
            ],
            "initContainers": [
                {"name": "init", "resources": {"limits": {"example.com/init": "1"}}}
            ]
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {"name": "a", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 42}}},
                {"name": "b", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0}},
                 "lastState": {"terminated": {"exitCode": 7}}}
            ],
            "initContainerStatuses": [
                {"name": "init", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 9}}}
            ]
        }
    }));
    let o = pod_observation(&p);
    assert_eq!(o.name, "p0");
    assert_eq!(o.phase, PodPhase::Failed);
    assert_eq!(o.node_name.as_deref(), Some("node-a"));
    assert!(o.terminating);
    assert_eq!(
        o.exit_codes,
        [42],
        "current state of regular containers only"
    );
    assert_eq!(
        o.resources,
        BTreeSet::from(["memory".to_owned(), "nvidia.com/gpu".to_owned()])
    );
}

#[test]
fn pod_without_status_is_unknown() {
    let o = pod_observation(&pod(json!({"metadata": {"name": "p"}})));
    assert_eq!(o.phase, PodPhase::Unknown);
    assert!(o.exit_codes.is_empty() && o.resources.is_empty());
}

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
fn controller_name_reads_only_the_controller_reference() {
    let owners: Vec<OwnerReference> = serde_json::from_value(json!([
        {"apiVersion": "v1", "kind": "X", "name": "other", "uid": "1"},
        {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw", "uid": "2", "controller": true}
    ]))
    .unwrap();
    assert_eq!(controller_name(&owners), Some("aw"));
    assert_eq!(controller_name(&owners[..1]), None);
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
