//! A malformed configuration file stops the controller binary before it does anything else,
//! with a message that names the offending field and value; without a file, the ConfigMap's
//! namespace must be known before anything else.

use std::process::Command;

use rstest::rstest;

fn run_with_config(yaml: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    // No cluster is needed: the configuration is read before any connection is made.
    let output = Command::new(env!("CARGO_BIN_EXE_appwrapper-controller"))
        .arg("--config-file")
        .arg(&path)
        .arg("--kubeconfig")
        .arg(dir.path().join("missing-kubeconfig"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr)
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
#[case::rule_violated(
    "appwrapper:\n  faultTolerance:\n    admissionGracePeriod: 10m\n    warmupGracePeriod: 5m\n",
    "appwrapper.faultTolerance.admissionGracePeriod",
    "10m0s"
)]
#[case::null_section(
    "appwrapper:\n  faultTolerance: null\n",
    "appwrapper.faultTolerance",
    "null"
)]
#[case::lease_timings(
    "controllerManager:\n  leaseDuration: 1s\n  renewDeadline: 1500ms\n  retryPeriod: 500ms\n",
    "controllerManager.leaseDuration",
    "1s"
)]
fn a_malformed_configuration_stops_the_binary_naming_the_field(
    #[case] yaml: &str,
    #[case] field: &str,
    #[case] value: &str,
) {
    let (code, stderr) = run_with_config(yaml);
    assert!(matches!(code, Some(c) if c != 0), "exit {code:?}: {stderr}");
    assert!(stderr.contains(field), "no {field:?} in: {stderr}");
    assert!(stderr.contains(value), "no {value:?} in: {stderr}");
    assert!(
        !stderr.contains("missing-kubeconfig"),
        "the configuration must be checked before connecting: {stderr}"
    );
}

#[test]
fn a_valid_configuration_gets_past_loading() {
    let (code, stderr) = run_with_config("appwrapper:\n  faultTolerance:\n    retryLimit: 1\n");
    assert!(matches!(code, Some(c) if c != 0), "{stderr}");
    assert!(stderr.contains("missing-kubeconfig"), "{stderr}");
}

#[test]
fn without_a_file_the_operator_namespace_is_needed_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_appwrapper-controller"))
        .args(["--config", "my-config"])
        .arg("--kubeconfig")
        .arg(dir.path().join("missing-kubeconfig"))
        .env_remove("NAMESPACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        matches!(output.status.code(), Some(c) if c != 0),
        "{stderr}"
    );
    assert!(
        stderr.contains("unable to determine the operator namespace, where ConfigMap my-config is"),
        "{stderr}"
    );
    assert!(!stderr.contains("missing-kubeconfig"), "{stderr}");
}
