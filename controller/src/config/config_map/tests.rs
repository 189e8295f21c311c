use super::*;
use rstest::rstest;
use serde_json::json;

use crate::config::AutopilotTaint;

const NS: &str = "appwrapper-system";

fn config_map(data: Option<&[(&str, &str)]>) -> ConfigMap {
    ConfigMap {
        data: data.map(|entries| {
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        }),
        ..ConfigMap::default()
    }
}

fn load(data: Option<&[(&str, &str)]>) -> Result<Config, ConfigMapError> {
    config_from(
        &config_map(data),
        NS,
        DEFAULT_NAME,
        &Config::defaults_in(NS),
    )
}

#[test]
fn a_created_config_map_holds_the_defaults_as_the_reference_writes_them() {
    let created = default_config_map(NS, DEFAULT_NAME, &Config::defaults_in(NS)).unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some(DEFAULT_NAME));
    assert_eq!(created.metadata.namespace.as_deref(), Some(NS));
    let data = created.data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), [KEY]);
    let taint = |value: &str, effect: &str| json!({"key": "autopilot.ibm.com/gpuhealth", "value": value, "effect": effect});
    let written: Value = serde_saphyr::from_str(&data[KEY]).unwrap();
    assert_eq!(
        written,
        json!({
            "appwrapper": {
                "autopilot": {
                    "injectAntiAffinities": true,
                    "monitorNodes": true,
                    "resourceTaints": {"nvidia.com/gpu": [
                        taint("WARN", "PreferNoSchedule"),
                        taint("TESTING", "NoSchedule"),
                        taint("EVICT", "NoExecute"),
                    ]},
                    "preferNoScheduleWeight": 50,
                },
                "userRBACAdmissionCheck": true,
                "faultTolerance": {
                    "admissionGracePeriod": 60_000_000_000_i64,
                    "warmupGracePeriod": 300_000_000_000_i64,
                    "failureGracePeriod": 60_000_000_000_i64,
                    "resetPause": 90_000_000_000_i64,
                    "retryLimit": 3,
                    "deletionGracePeriod": 600_000_000_000_i64,
                    "gracePeriodCeiling": 86_400_000_000_000_i64,
                    "successTTLCeiling": 604_800_000_000_000_i64,
                },
            },
            "certManagement": {
                "namespace": NS,
                "certificateDir": "/tmp/k8s-webhook-server/serving-certs",
                "certificateName": "appwrapper-ca",
                "certificateOrg": "appwrapper",
                "mutatingWebhookConfigName": "appwrapper-mutating-webhook-configuration",
                "validatingWebhookConfigName": "appwrapper-validating-webhook-configuration",
                "webhookServiceName": "appwrapper-webhook-service",
                "webhookSecretName": "appwrapper-webhook-server-cert",
            },
            "controllerManager": {
                "metrics": {"bindAddress": ":8443"},
                "health": {"bindAddress": ":8081"},
            },
            "webhooksEnabled": true,
        })
    );
    assert_eq!(
        Config::defaults_in(NS).overlaid(&data[KEY]).unwrap(),
        Config::defaults_in(NS)
    );
}

#[rstest]
#[case::no_data(None)]
#[case::empty_data(Some(&[][..]))]
#[case::two_entries(Some(&[("a.yaml", ""), ("b.yaml", "")][..]))]
fn only_a_single_entry_can_be_resolved(#[case] data: Option<&[(&str, &str)]>) {
    let err = load(data).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot resolve config from ConfigMap appwrapper-system/appwrapper-operator-config"
    );
}

#[rstest]
#[case::the_usual_key("config.yaml")]
#[case::any_key("operator.yaml")]
fn the_single_entry_is_laid_over_the_defaults_whatever_its_key(#[case] key: &str) {
    let config = load(Some(&[(key, "appwrapper:\n  schedulerName: custom\n")])).unwrap();
    let mut expected = Config::defaults_in(NS);
    expected.appwrapper.scheduler_name = "custom".into();
    assert_eq!(config, expected);
}

#[test]
fn a_configured_resource_keeps_the_default_gpu_taints() {
    let document = "appwrapper:\n  autopilot:\n    resourceTaints:\n      example.com/fpga:\n      - {key: health, value: BAD, effect: NoExecute}\n";
    let taints = load(Some(&[(KEY, document)]))
        .unwrap()
        .appwrapper
        .autopilot
        .unwrap()
        .resource_taints;
    let defaults = Config::default()
        .appwrapper
        .autopilot
        .unwrap()
        .resource_taints;
    assert_eq!(taints["nvidia.com/gpu"], defaults["nvidia.com/gpu"]);
    assert_eq!(
        taints["example.com/fpga"],
        [AutopilotTaint {
            key: "health".into(),
            value: "BAD".into(),
            effect: "NoExecute".into()
        }]
    );
}

#[test]
fn a_bad_entry_names_the_config_map_and_the_field() {
    let err = load(Some(&[(
        KEY,
        "appwrapper:\n  faultTolerance:\n    retryLimit: lots\n",
    )]))
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("ConfigMap appwrapper-system/appwrapper-operator-config: "),
        "{err}"
    );
    assert!(
        err.contains("appwrapper.faultTolerance.retryLimit"),
        "{err}"
    );
}
