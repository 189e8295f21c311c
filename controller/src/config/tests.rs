use super::*;
use rstest::rstest;

#[test]
fn empty_document_gives_defaults() {
    let config = Config::from_yaml("").unwrap();
    assert_eq!(config, Config::default());
    let ft = &config.appwrapper.fault_tolerance;
    assert_eq!(ft.admission_grace_period, GoDuration::from_mins(1));
    assert_eq!(ft.warmup_grace_period, GoDuration::from_mins(5));
    assert_eq!(ft.failure_grace_period, GoDuration::from_mins(1));
    assert_eq!(ft.reset_pause, GoDuration::from_secs(90));
    assert_eq!(ft.retry_limit, 3);
    assert_eq!(ft.deletion_grace_period, GoDuration::from_mins(10));
    assert_eq!(ft.grace_period_ceiling, GoDuration::from_hours(24));
    assert_eq!(ft.success_ttl_ceiling, GoDuration::from_hours(168));
    assert!(config.appwrapper.user_rbac_admission_check);
    assert!(config.webhooks_enabled);
    assert_eq!(config.controller_manager.metrics.bind_address, ":8443");
    assert_eq!(config.controller_manager.health.bind_address, ":8081");
    assert!(!config.controller_manager.leader_election);
    let autopilot = config.appwrapper.autopilot.unwrap();
    assert!(autopilot.inject_anti_affinities && autopilot.monitor_nodes);
    assert_eq!(autopilot.prefer_no_schedule_weight(), 50);
    let taints = &autopilot.resource_taints["nvidia.com/gpu"];
    let values: Vec<_> = taints.iter().map(|t| (&*t.value, &*t.effect)).collect();
    assert_eq!(
        values,
        [
            ("WARN", "PreferNoSchedule"),
            ("TESTING", "NoSchedule"),
            ("EVICT", "NoExecute")
        ]
    );
}

#[test]
fn reference_file_format_with_integer_nanoseconds() {
    let yaml = r#"
appwrapper:
  userRBACAdmissionCheck: false
  faultTolerance:
    admissionGracePeriod: 60000000000
    warmupGracePeriod: 300000000000
    failureGracePeriod: 60000000000
    resetPause: 90000000000
    retryLimit: 3
    deletionGracePeriod: 600000000000
    gracePeriodCeiling: 86400000000000
    successTTLCeiling: 604800000000000
  schedulerName: my-scheduler
  defaultQueueName: default-queue
certManagement:
  namespace: appwrapper-system
controllerManager:
  metrics: {bindAddress: ":8443"}
  health: {bindAddress: ":8081"}
  leaderElection: true
  enableHTTP2: true
webhooksEnabled: false
"#;
    let config = Config::from_yaml(yaml).unwrap();
    assert_eq!(
        config.appwrapper.fault_tolerance,
        FaultToleranceConfig::default()
    );
    assert!(!config.appwrapper.user_rbac_admission_check);
    assert_eq!(config.appwrapper.scheduler_name, "my-scheduler");
    assert_eq!(config.appwrapper.default_queue_name, "default-queue");
    assert_eq!(config.cert_management.namespace, "appwrapper-system");
    assert_eq!(config.cert_management.certificate_name, "appwrapper-ca");
    assert!(config.controller_manager.leader_election);
    assert!(config.controller_manager.enable_http2);
    assert!(!config.webhooks_enabled);
}

#[test]
fn go_duration_strings_and_partial_sections() {
    let yaml = "appwrapper:\n  faultTolerance:\n    admissionGracePeriod: 5s\n    warmupGracePeriod: 1m30s\n    retryLimit: 1\n";
    let ft = Config::from_yaml(yaml).unwrap().appwrapper.fault_tolerance;
    assert_eq!(ft.admission_grace_period, GoDuration::from_secs(5));
    assert_eq!(ft.warmup_grace_period, GoDuration::from_secs(90));
    assert_eq!(ft.retry_limit, 1);
    assert_eq!(ft.reset_pause, GoDuration::from_secs(90));
}

#[test]
fn explicit_null_autopilot_disables_it_and_absent_keeps_defaults() {
    let config = Config::from_yaml("appwrapper:\n  autopilot: null\n").unwrap();
    assert_eq!(config.appwrapper.autopilot, None);
    let config = Config::from_yaml("appwrapper:\n  schedulerName: x\n").unwrap();
    assert_eq!(
        config.appwrapper.autopilot,
        Some(AutopilotConfig::default())
    );
}

#[test]
fn autopilot_fields_and_null_weight() {
    let yaml = r#"
appwrapper:
  autopilot:
    monitorNodes: false
    preferNoScheduleWeight: null
    resourceTaints:
      example.com/fpga:
      - {key: health, value: BAD, effect: NoExecute}
"#;
    let autopilot = Config::from_yaml(yaml)
        .unwrap()
        .appwrapper
        .autopilot
        .unwrap();
    assert!(!autopilot.monitor_nodes);
    assert!(autopilot.inject_anti_affinities);
    assert_eq!(autopilot.prefer_no_schedule_weight(), 1);
    assert_eq!(
        autopilot.resource_taints["example.com/fpga"],
        [AutopilotTaint {
            key: "health".into(),
            value: "BAD".into(),
            effect: "NoExecute".into()
        }]
    );
}

fn default_gpu_taints() -> Vec<AutopilotTaint> {
    AutopilotConfig::default().resource_taints["nvidia.com/gpu"].clone()
}

fn taint(value: &str) -> AutopilotTaint {
    AutopilotTaint {
        key: "health".into(),
        value: value.into(),
        effect: "NoExecute".into(),
    }
}

/// The reference decodes its ConfigMap into the filled-in defaults with Go's `json.Unmarshal`:
/// map keys merge, lists replace, `null` clears only pointers, maps and lists.
#[rstest]
#[case::a_new_resource_keeps_the_gpu_defaults(
    "{example.com/fpga: [{key: health, value: BAD, effect: NoExecute}]}",
    &[("example.com/fpga", vec![taint("BAD")]), ("nvidia.com/gpu", default_gpu_taints())]
)]
#[case::a_gpu_list_replaces_the_default_list(
    "{nvidia.com/gpu: [{key: health, value: BAD, effect: NoExecute}]}",
    &[("nvidia.com/gpu", vec![taint("BAD")])]
)]
#[case::an_empty_gpu_list_neutralises_the_defaults("{nvidia.com/gpu: []}", &[("nvidia.com/gpu", vec![])])]
#[case::a_null_gpu_list_is_empty("{nvidia.com/gpu: null}", &[("nvidia.com/gpu", vec![])])]
#[case::a_null_map_is_empty("null", &[])]
#[case::an_empty_map_changes_nothing("{}", &[("nvidia.com/gpu", default_gpu_taints())])]
fn resource_taints_merge_by_resource(
    #[case] resource_taints: &str,
    #[case] expected: &[(&str, Vec<AutopilotTaint>)],
) {
    let yaml = format!("appwrapper:\n  autopilot:\n    resourceTaints: {resource_taints}\n");
    let taints = Config::from_yaml(&yaml)
        .unwrap()
        .appwrapper
        .autopilot
        .unwrap()
        .resource_taints;
    let expected: BTreeMap<String, Vec<AutopilotTaint>> = expected
        .iter()
        .map(|(resource, taints)| (resource.to_string(), taints.clone()))
        .collect();
    assert_eq!(taints, expected);
}

#[rstest]
#[case::null_value_fields_keep_their_defaults(
    "appwrapper: {schedulerName: null, faultTolerance: {retryLimit: null}}",
    Config::default()
)]
#[case::null_webhooks_enabled_is_false("webhooksEnabled: null", Config {
    webhooks_enabled: false,
    ..Config::default()
})]
#[case::null_cert_management_is_the_defaults("certManagement: null", Config::default())]
#[case::field_names_ignore_case(
    "AppWrapper: {FaultTolerance: {RETRYLIMIT: 7}}\nWebhooksEnabled: false",
    {
        let mut config = Config::default();
        config.appwrapper.fault_tolerance.retry_limit = 7;
        config.webhooks_enabled = false;
        config
    }
)]
#[case::only_the_named_fields_change(
    "controllerManager: {metrics: {bindAddress: ':9000'}}",
    {
        let mut config = Config::default();
        config.controller_manager.metrics.bind_address = ":9000".into();
        config
    }
)]
fn documents_overlay_the_defaults(#[case] yaml: &str, #[case] expected: Config) {
    assert_eq!(Config::from_yaml(yaml).unwrap(), expected);
}

#[test]
fn overlaying_starts_from_the_given_configuration() {
    let base = Config::defaults_in("appwrapper-system");
    let config = base.overlaid("appwrapper: {schedulerName: s}\n").unwrap();
    assert_eq!(config.cert_management.namespace, "appwrapper-system");
    assert_eq!(config.appwrapper.scheduler_name, "s");
}

#[test]
fn removed_options_are_ignored() {
    let yaml = "appwrapper:\n  enableKueueIntegrations: true\n  slackQueueName: slack\n";
    assert!(Config::from_yaml(yaml).is_ok());
}

#[rstest]
#[case::deletion_grace_above_ceiling(
    "deletionGracePeriod: 25h",
    "appwrapper.faultTolerance.deletionGracePeriod",
    "25h0m0s"
)]
#[case::reset_pause_above_ceiling(
    "resetPause: 25h",
    "appwrapper.faultTolerance.resetPause",
    "25h0m0s"
)]
#[case::failure_grace_above_ceiling(
    "failureGracePeriod: 25h",
    "appwrapper.faultTolerance.failureGracePeriod",
    "25h0m0s"
)]
#[case::admission_grace_above_ceiling(
    "{admissionGracePeriod: 25h, warmupGracePeriod: 26h, gracePeriodCeiling: 24h}",
    "appwrapper.faultTolerance.admissionGracePeriod",
    "25h0m0s"
)]
#[case::warmup_grace_above_ceiling(
    "warmupGracePeriod: 25h",
    "appwrapper.faultTolerance.warmupGracePeriod",
    "25h0m0s"
)]
#[case::admission_above_warmup(
    "{admissionGracePeriod: 10m, warmupGracePeriod: 5m}",
    "appwrapper.faultTolerance.admissionGracePeriod",
    "10m0s"
)]
#[case::success_ttl_not_positive(
    "successTTLCeiling: 0",
    "appwrapper.faultTolerance.successTTLCeiling",
    "0s"
)]
fn validation_names_field_and_value(
    #[case] fault_tolerance: &str,
    #[case] field: &str,
    #[case] value: &str,
) {
    let yaml = if fault_tolerance.starts_with('{') {
        format!("appwrapper:\n  faultTolerance: {fault_tolerance}\n")
    } else {
        format!("appwrapper:\n  faultTolerance:\n    {fault_tolerance}\n")
    };
    let err = Config::from_yaml(&yaml).unwrap_err();
    let ConfigError::Invalid {
        field: f, value: v, ..
    } = &err
    else {
        panic!("expected a validation error, got {err}");
    };
    assert_eq!((*f, v.as_str()), (field, value));
    assert!(err.to_string().contains(field), "{err}");
}

#[rstest]
#[case::malformed_duration("appwrapper:\n  faultTolerance:\n    resetPause: 1x\n", "1x")]
#[case::null_fault_tolerance("appwrapper:\n  faultTolerance: null\n", "faultTolerance")]
#[case::null_appwrapper("appwrapper: null\n", "appwrapper: must not be null")]
#[case::null_controller_manager("controllerManager: null\n", "controllerManager: must not be null")]
#[case::not_a_mapping("[1, 2]\n", "invalid type")]
#[case::wrong_type("appwrapper:\n  faultTolerance:\n    retryLimit: lots\n", "lots")]
fn parse_errors_name_the_bad_value(#[case] yaml: &str, #[case] needle: &str) {
    let err = Config::from_yaml(yaml).unwrap_err();
    assert!(matches!(err, ConfigError::Parse(_)), "{err}");
    assert!(err.to_string().contains(needle), "{err}");
}

#[rstest]
#[case::wrong_type(
    "appwrapper:\n  faultTolerance:\n    retryLimit: lots\n",
    "appwrapper.faultTolerance.retryLimit",
    "lots"
)]
#[case::malformed_duration(
    "appwrapper:\n  faultTolerance:\n    resetPause: 1x\n",
    "appwrapper.faultTolerance.resetPause",
    "1x"
)]
#[case::not_a_bool("webhooksEnabled: maybe\n", "webhooksEnabled", "maybe")]
#[case::nested_map(
    "controllerManager:\n  metrics:\n    bindAddress: [8443]\n",
    "controllerManager.metrics.bindAddress",
    "sequence"
)]
#[case::taint_list(
    "appwrapper:\n  autopilot:\n    resourceTaints:\n      nvidia.com/gpu: EVICT\n",
    "appwrapper.autopilot.resourceTaints.nvidia.com/gpu",
    "EVICT"
)]
fn parse_errors_name_the_field(#[case] yaml: &str, #[case] field: &str, #[case] value: &str) {
    let err = Config::from_yaml(yaml).unwrap_err().to_string();
    assert!(err.contains(&format!("{field}: ")), "{err}");
    assert!(err.contains(value), "{err}");
}

#[rstest]
#[case::renew_not_below_lease(
    "{leaseDuration: 10s, renewDeadline: 10s}",
    "controllerManager.leaseDuration"
)]
#[case::retry_not_below_renew(
    "{renewDeadline: 2s, retryPeriod: 2s}",
    "controllerManager.renewDeadline"
)]
#[case::retry_zero("{retryPeriod: 0}", "controllerManager.retryPeriod")]
fn lease_timings_must_nest(#[case] manager: &str, #[case] field: &str) {
    let err = Config::from_yaml(&format!("controllerManager: {manager}\n")).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Invalid { field: f, .. } if *f == field),
        "{err}"
    );
}

#[test]
fn leader_election_settings_have_controller_runtime_defaults() {
    let yaml = "controllerManager:\n  leaderElection: true\n  leaderElectionNamespace: ops\n  leaseDuration: 4s\n  renewDeadline: 3s\n  retryPeriod: 500ms\n";
    let manager = Config::from_yaml(yaml).unwrap().controller_manager;
    assert!(manager.leader_election);
    assert_eq!(manager.leader_election_id, LEADER_ELECTION_LEASE);
    assert_eq!(manager.leader_election_namespace, "ops");
    assert_eq!(manager.lease_duration, GoDuration::from_secs(4));
    let defaults = ControllerManagerConfig::default();
    assert_eq!(
        (
            defaults.lease_duration,
            defaults.renew_deadline,
            defaults.retry_period
        ),
        (
            GoDuration::from_secs(15),
            GoDuration::from_secs(10),
            GoDuration::from_secs(2)
        )
    );
}
