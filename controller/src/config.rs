//! The operator configuration (spec §7.2, §7.3): YAML laid over the defaults.
//!
//! Durations are Go `time.Duration` values: integer nanoseconds as in the reference's file
//! format, or Go duration strings (`90s`, `1m30s`).

pub mod config_map;
mod nulls;
pub mod overlay;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::duration::GoDuration;
use nulls::{null_as_default, refuse_null, taint_map};

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    #[serde(deserialize_with = "refuse_null")]
    pub appwrapper: AppWrapperConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub cert_management: CertManagementConfig,
    #[serde(deserialize_with = "refuse_null")]
    pub controller_manager: ControllerManagerConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub webhooks_enabled: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            appwrapper: AppWrapperConfig::default(),
            cert_management: CertManagementConfig::default(),
            controller_manager: ControllerManagerConfig::default(),
            webhooks_enabled: true,
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct AppWrapperConfig {
    /// `None` (an explicit `autopilot: null`) disables every Autopilot feature; an absent key
    /// keeps the defaults.
    #[serde(default = "default_autopilot")]
    pub autopilot: Option<AutopilotConfig>,
    #[serde(rename = "userRBACAdmissionCheck")]
    pub user_rbac_admission_check: bool,
    #[serde(deserialize_with = "refuse_null")]
    pub fault_tolerance: FaultToleranceConfig,
    pub scheduler_name: String,
    pub default_queue_name: String,
}

impl Default for AppWrapperConfig {
    fn default() -> Self {
        AppWrapperConfig {
            autopilot: default_autopilot(),
            user_rbac_admission_check: true,
            fault_tolerance: FaultToleranceConfig::default(),
            scheduler_name: String::new(),
            default_queue_name: String::new(),
        }
    }
}

fn default_autopilot() -> Option<AutopilotConfig> {
    Some(AutopilotConfig::default())
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct AutopilotConfig {
    pub inject_anti_affinities: bool,
    pub monitor_nodes: bool,
    /// Resource name → node labels (written as taints) that mark a node unhealthy for it.
    #[serde(deserialize_with = "taint_map")]
    pub resource_taints: BTreeMap<String, Vec<AutopilotTaint>>,
    /// `None` when explicitly null, which means weight 1.
    #[serde(default = "default_prefer_weight")]
    pub prefer_no_schedule_weight: Option<i32>,
}

impl AutopilotConfig {
    pub fn prefer_no_schedule_weight(&self) -> i32 {
        self.prefer_no_schedule_weight.unwrap_or(1)
    }
}

fn default_prefer_weight() -> Option<i32> {
    Some(50)
}

pub const AUTOPILOT_GPU_HEALTH_LABEL: &str = "autopilot.ibm.com/gpuhealth";

impl Default for AutopilotConfig {
    fn default() -> Self {
        let taint = |value: &str, effect: &str| AutopilotTaint {
            key: AUTOPILOT_GPU_HEALTH_LABEL.to_owned(),
            value: value.to_owned(),
            effect: effect.to_owned(),
        };
        AutopilotConfig {
            inject_anti_affinities: true,
            monitor_nodes: true,
            resource_taints: BTreeMap::from([(
                "nvidia.com/gpu".to_owned(),
                vec![
                    taint("WARN", "PreferNoSchedule"),
                    taint("TESTING", "NoSchedule"),
                    taint("EVICT", "NoExecute"),
                ],
            )]),
            prefer_no_schedule_weight: default_prefer_weight(),
        }
    }
}

/// A core/v1 Taint as written in the config; Autopilot matches it against node *labels*.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct AutopilotTaint {
    #[serde(deserialize_with = "null_as_default")]
    pub key: String,
    #[serde(deserialize_with = "null_as_default")]
    pub value: String,
    #[serde(deserialize_with = "null_as_default")]
    pub effect: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct FaultToleranceConfig {
    pub admission_grace_period: GoDuration,
    pub warmup_grace_period: GoDuration,
    pub failure_grace_period: GoDuration,
    /// RetryPausePeriod.
    pub reset_pause: GoDuration,
    pub retry_limit: i32,
    /// ForcefulDeletionGracePeriod.
    pub deletion_grace_period: GoDuration,
    /// GracePeriodMaximum: the clamp for every grace period except SuccessTTL.
    pub grace_period_ceiling: GoDuration,
    /// SuccessTTL default and ceiling.
    #[serde(rename = "successTTLCeiling")]
    pub success_ttl_ceiling: GoDuration,
}

impl Default for FaultToleranceConfig {
    fn default() -> Self {
        FaultToleranceConfig {
            admission_grace_period: GoDuration::from_mins(1),
            warmup_grace_period: GoDuration::from_mins(5),
            failure_grace_period: GoDuration::from_mins(1),
            reset_pause: GoDuration::from_secs(90),
            retry_limit: 3,
            deletion_grace_period: GoDuration::from_mins(10),
            grace_period_ceiling: GoDuration::from_hours(24),
            success_ttl_ceiling: GoDuration::from_hours(7 * 24),
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct CertManagementConfig {
    pub namespace: String,
    pub certificate_dir: String,
    pub certificate_name: String,
    pub certificate_org: String,
    pub mutating_webhook_config_name: String,
    pub validating_webhook_config_name: String,
    pub webhook_service_name: String,
    pub webhook_secret_name: String,
}

impl Default for CertManagementConfig {
    fn default() -> Self {
        CertManagementConfig {
            namespace: String::new(),
            certificate_dir: "/tmp/k8s-webhook-server/serving-certs".to_owned(),
            certificate_name: "appwrapper-ca".to_owned(),
            certificate_org: "appwrapper".to_owned(),
            mutating_webhook_config_name: "appwrapper-mutating-webhook-configuration".to_owned(),
            validating_webhook_config_name: "appwrapper-validating-webhook-configuration"
                .to_owned(),
            webhook_service_name: "appwrapper-webhook-service".to_owned(),
            webhook_secret_name: "appwrapper-webhook-server-cert".to_owned(),
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct ControllerManagerConfig {
    pub metrics: BindAddress,
    pub health: BindAddress,
    pub leader_election: bool,
    #[serde(rename = "enableHTTP2")]
    pub enable_http2: bool,
    /// Name of the leader-election Lease (not in the reference's file format).
    #[serde(rename = "leaderElectionID")]
    pub leader_election_id: String,
    /// Namespace of the Lease; empty means the operator namespace (not in the reference's
    /// file format).
    pub leader_election_namespace: String,
    /// How long a Lease nobody renews keeps others waiting (controller-runtime's default).
    pub lease_duration: GoDuration,
    /// How long the leader keeps trying to renew before it gives up leading.
    pub renew_deadline: GoDuration,
    /// How often candidates try to acquire and the leader renews.
    pub retry_period: GoDuration,
}

impl Default for ControllerManagerConfig {
    fn default() -> Self {
        ControllerManagerConfig {
            metrics: BindAddress {
                bind_address: ":8443".to_owned(),
            },
            health: BindAddress {
                bind_address: ":8081".to_owned(),
            },
            leader_election: false,
            enable_http2: false,
            leader_election_id: LEADER_ELECTION_LEASE.to_owned(),
            leader_election_namespace: String::new(),
            lease_duration: GoDuration::from_secs(15),
            renew_deadline: GoDuration::from_secs(10),
            retry_period: GoDuration::from_secs(2),
        }
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct BindAddress {
    pub bind_address: String,
}

/// Name of the leader-election Lease.
pub const LEADER_ELECTION_LEASE: &str = "f134c674.codeflare.dev";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("parsing config: {0}")]
    Parse(String),
    #[error("invalid config: {field} = {value}: {rule}")]
    Invalid {
        field: &'static str,
        value: String,
        rule: String,
    },
}

impl Config {
    /// The reference's defaults for an operator in `namespace`, which it puts in
    /// `certManagement.namespace`.
    pub fn defaults_in(namespace: &str) -> Config {
        let mut config = Config::default();
        config.cert_management.namespace = namespace.to_owned();
        config
    }

    /// A YAML document laid over the defaults; see [`Config::overlaid`].
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        Config::default().overlaid(text)
    }

    /// `document` (YAML) laid over this configuration as the reference lays its ConfigMap over
    /// its defaults ([`overlay`]), then validated. An empty document changes nothing. Errors
    /// name the field (`appwrapper.faultTolerance.retryLimit: invalid type: ...`).
    pub fn overlaid(&self, document: &str) -> Result<Config, ConfigError> {
        let document: Value = if document.trim().is_empty() {
            Value::Null
        } else {
            serde_saphyr::from_str(document).map_err(|e| ConfigError::Parse(e.to_string()))?
        };
        let mut merged =
            serde_json::to_value(self).map_err(|e| ConfigError::Parse(e.to_string()))?;
        overlay::overlay(&mut merged, document);
        let config: Config = serde_path_to_error::deserialize(merged)
            .map_err(|e| ConfigError::Parse(format!("{}: {}", e.path(), e.inner())))?;
        config.validate()?;
        Ok(config)
    }

    /// [`Config::overlaid`] with the contents of a file.
    pub fn overlaid_file(&self, path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        self.overlaid(&text)
    }

    /// The reference's validation rules (§7.3), in order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ft = &self.appwrapper.fault_tolerance;
        let ceiling = ft.grace_period_ceiling;
        let at_most_ceiling: [(&'static str, GoDuration); 5] = [
            (
                "appwrapper.faultTolerance.deletionGracePeriod",
                ft.deletion_grace_period,
            ),
            ("appwrapper.faultTolerance.resetPause", ft.reset_pause),
            (
                "appwrapper.faultTolerance.failureGracePeriod",
                ft.failure_grace_period,
            ),
            (
                "appwrapper.faultTolerance.admissionGracePeriod",
                ft.admission_grace_period,
            ),
            (
                "appwrapper.faultTolerance.warmupGracePeriod",
                ft.warmup_grace_period,
            ),
        ];
        for (field, value) in at_most_ceiling {
            if value > ceiling {
                return Err(ConfigError::Invalid {
                    field,
                    value: value.to_string(),
                    rule: format!("must not exceed gracePeriodCeiling ({ceiling})"),
                });
            }
        }
        if ft.admission_grace_period > ft.warmup_grace_period {
            return Err(ConfigError::Invalid {
                field: "appwrapper.faultTolerance.admissionGracePeriod",
                value: ft.admission_grace_period.to_string(),
                rule: format!(
                    "must not exceed warmupGracePeriod ({})",
                    ft.warmup_grace_period
                ),
            });
        }
        if ft.success_ttl_ceiling <= GoDuration::ZERO {
            return Err(ConfigError::Invalid {
                field: "appwrapper.faultTolerance.successTTLCeiling",
                value: ft.success_ttl_ceiling.to_string(),
                rule: "must be greater than 0".to_owned(),
            });
        }
        self.controller_manager.validate_leases()
    }
}

impl ControllerManagerConfig {
    /// client-go's rule: leaseDuration > renewDeadline > retryPeriod > 0.
    fn validate_leases(&self) -> Result<(), ConfigError> {
        let rules: [(&'static str, GoDuration, GoDuration, &str); 3] = [
            (
                "controllerManager.retryPeriod",
                self.retry_period,
                GoDuration::ZERO,
                "0",
            ),
            (
                "controllerManager.renewDeadline",
                self.renew_deadline,
                self.retry_period,
                "retryPeriod",
            ),
            (
                "controllerManager.leaseDuration",
                self.lease_duration,
                self.renew_deadline,
                "renewDeadline",
            ),
        ];
        for (field, value, bound, name) in rules {
            if value <= bound {
                return Err(ConfigError::Invalid {
                    field,
                    value: value.to_string(),
                    rule: format!("must be greater than {name} ({bound})"),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
