//! The suite's controller settings in the operator's own ConfigMap format
//! (`appwrapper-operator-config`, key `config.yaml`), which the reference operator and ours
//! both read.

use std::path::Path;

use anyhow::Context as _;
use appwrapper_controller::config::Config;
use appwrapper_controller::duration::GoDuration;
use serde_json::{Value, json};

/// Where the controller runs, which decides its addresses and certificate place.
pub enum Placement<'a> {
    /// A process on this machine beside the cluster, in `namespace`, its certificate copied
    /// into `cert_dir`.
    Beside {
        cert_dir: &'a Path,
        namespace: &'a str,
    },
    /// A pod in `namespace`: the release's ports and certificate place.
    InCluster { namespace: &'a str },
}

fn nanos(d: &GoDuration) -> i128 {
    let std = d.to_std().as_nanos() as i128;
    if d.is_negative() { -std } else { std }
}

/// `config.yaml` of the operator's ConfigMap: the suite's settings in the operator's own
/// format. It overlays this onto its defaults with `sigs.k8s.io/yaml`, so durations are
/// `time.Duration` numbers (nanoseconds), not strings.
pub fn operator_config(config: &Config, placement: &Placement) -> anyhow::Result<Value> {
    let aw = &config.appwrapper;
    let ft = &aw.fault_tolerance;
    let mut appwrapper = json!({
        "userRBACAdmissionCheck": aw.user_rbac_admission_check,
        "faultTolerance": {
            "admissionGracePeriod": nanos(&ft.admission_grace_period),
            "warmupGracePeriod": nanos(&ft.warmup_grace_period),
            "failureGracePeriod": nanos(&ft.failure_grace_period),
            "resetPause": nanos(&ft.reset_pause),
            "retryLimit": ft.retry_limit,
            "deletionGracePeriod": nanos(&ft.deletion_grace_period),
            "gracePeriodCeiling": nanos(&ft.grace_period_ceiling),
            "successTTLCeiling": nanos(&ft.success_ttl_ceiling),
        },
    });
    if let Some(autopilot) = &aw.autopilot {
        appwrapper["autopilot"] =
            serde_json::to_value(autopilot).context("rendering the autopilot settings")?;
    }
    if !aw.scheduler_name.is_empty() {
        appwrapper["schedulerName"] = json!(aw.scheduler_name);
    }
    if !aw.default_queue_name.is_empty() {
        appwrapper["defaultQueueName"] = json!(aw.default_queue_name);
    }
    let (cert_management, controller_manager) = match placement {
        Placement::Beside {
            cert_dir,
            namespace,
        } => (
            json!({ "namespace": namespace, "certificateDir": cert_dir.display().to_string() }),
            // Ports picked by the operator, so that nothing on this machine clashes.
            json!({
                "metrics": { "bindAddress": "127.0.0.1:0" },
                "health": { "bindAddress": "127.0.0.1:0" },
                "leaderElection": false,
            }),
        ),
        Placement::InCluster { namespace } => (
            json!({ "namespace": namespace }),
            json!({
                "metrics": { "bindAddress": ":8443" },
                "health": { "bindAddress": ":8081" },
                "leaderElection": false,
            }),
        ),
    };
    Ok(json!({
        "appwrapper": appwrapper,
        "certManagement": cert_management,
        "controllerManager": controller_manager,
        "webhooksEnabled": true,
    }))
}
