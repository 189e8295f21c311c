//! The `workload.codeflare.dev/v1beta2` AppWrapper types, with the reference's exact JSON names.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const GROUP: &str = "workload.codeflare.dev";
pub const VERSION: &str = "v1beta2";
pub const API_VERSION: &str = "workload.codeflare.dev/v1beta2";
pub const KIND: &str = "AppWrapper";

/// Label put on every wrapped object and every pod template; pods are counted by it.
pub const APPWRAPPER_LABEL: &str = "workload.codeflare.dev/appwrapper";
pub const USER_LABEL: &str = "workload.codeflare.dev/user";
pub const USERID_LABEL: &str = "workload.codeflare.dev/userid";
pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
pub const FINALIZER: &str = "workload.codeflare.dev/finalizer";
/// The value of `spec.managedBy` (or its absence) that means "this controller".
pub const CONTROLLER_NAME: &str = "workload.codeflare.dev/appwrapper-controller";

/// The AppWrapper: an ordered list of wrapped resources that Kueue admits as one workload.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "workload.codeflare.dev",
    version = "v1beta2",
    kind = "AppWrapper",
    plural = "appwrappers",
    singular = "appwrapper",
    shortname = "aw",
    namespaced,
    status = "AppWrapperStatus",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Quota Reserved","type":"string","jsonPath":".status.conditions[?(@.type==\"QuotaReserved\")].status"}"#,
    printcolumn = r#"{"name":"Resources Deployed","type":"string","jsonPath":".status.conditions[?(@.type==\"ResourcesDeployed\")].status"}"#,
    printcolumn = r#"{"name":"Unhealthy","type":"string","jsonPath":".status.conditions[?(@.type==\"Unhealthy\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperSpec {
    pub components: Vec<AppWrapperComponent>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspend: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperComponent {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Declared PodSets (Go name DeclaredPodSets).
    #[serde(default, rename = "podSets", skip_serializing_if = "Vec::is_empty")]
    pub declared_pod_sets: Vec<AppWrapperPodSet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_set_infos: Vec<AppWrapperPodSetInfo>,
    /// The wrapped manifest, kept as untyped JSON so that it round-trips unchanged.
    #[schemars(schema_with = "embedded_resource")]
    pub template: serde_json::Value,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperPodSet {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperPodSetInfo {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<k8s_openapi::api::core::v1::PodSchedulingGate>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperStatus {
    #[serde(default, skip_serializing_if = "Phase::is_empty")]
    pub phase: Phase,
    /// Go name `Retries`; never decreases.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resetting_count: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub component_status: Vec<AppWrapperComponentStatus>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppWrapperComponentStatus {
    pub name: String,
    pub kind: String,
    pub api_version: String,
    pub pod_sets: Vec<AppWrapperPodSet>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status.phase`; `Empty` is the initial `""`.
#[derive(
    Serialize,
    Deserialize,
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    JsonSchema,
)]
pub enum Phase {
    #[default]
    #[serde(rename = "")]
    Empty,
    Suspended,
    Resuming,
    Running,
    Suspending,
    Resetting,
    Failed,
    Succeeded,
    Terminating,
    /// A phase this controller does not write (another implementation's, or a newer one's).
    /// Such an AppWrapper is left alone (spec §2.1) instead of breaking the watch.
    #[serde(other)]
    Unknown,
}

impl Phase {
    pub const ALL: [Phase; 9] = [
        Phase::Empty,
        Phase::Suspended,
        Phase::Resuming,
        Phase::Running,
        Phase::Suspending,
        Phase::Resetting,
        Phase::Failed,
        Phase::Succeeded,
        Phase::Terminating,
    ];

    pub fn is_empty(&self) -> bool {
        *self == Phase::Empty
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, Phase::Failed | Phase::Succeeded)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Empty => "",
            Phase::Suspended => "Suspended",
            Phase::Resuming => "Resuming",
            Phase::Running => "Running",
            Phase::Suspending => "Suspending",
            Phase::Resetting => "Resetting",
            Phase::Failed => "Failed",
            Phase::Succeeded => "Succeeded",
            Phase::Terminating => "Terminating",
            Phase::Unknown => "Unknown",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_empty() {
            "Empty"
        } else {
            self.as_str()
        })
    }
}

impl std::str::FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Phase::ALL
            .into_iter()
            .find(|p| p.as_str() == s || (s == "Empty" && p.is_empty()))
            .ok_or_else(|| format!("unknown AppWrapper phase {s:?}"))
    }
}

/// AppWrapper-level condition types.
pub mod condition {
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    pub const RESOURCES_DEPLOYED: &str = "ResourcesDeployed";
    pub const PODS_READY: &str = "PodsReady";
    pub const UNHEALTHY: &str = "Unhealthy";
    pub const DELETING_RESOURCES: &str = "DeletingResources";
}

/// Schema of a component template: an arbitrary embedded Kubernetes object.
pub fn embedded_resource(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_round_trip_and_unknown_ones_do_not_fail_to_parse() {
        for phase in Phase::ALL {
            let json = serde_json::to_value(phase).unwrap();
            assert_eq!(json, phase.as_str());
            assert_eq!(serde_json::from_value::<Phase>(json).unwrap(), phase);
        }
        let status: AppWrapperStatus =
            serde_json::from_value(serde_json::json!({"phase": "Paused"})).unwrap();
        assert_eq!(status.phase, Phase::Unknown);
    }

    /// Found by the podset_path fuzz target: with serde_json's `raw_value` feature (which axum's
    /// `json` feature turns on), a map whose first key is `$serde_json::private::RawValue` is
    /// read as a raw value, and fails to parse or silently becomes another value. The API server
    /// sends an object's keys sorted, so `$` comes first, and a template may hold any key: one
    /// such AppWrapper would make every list of AppWrappers fail.
    #[test]
    fn a_template_key_named_like_serde_json_s_raw_value_token_is_an_ordinary_key() {
        let token = "$serde_json::private::RawValue";
        let text = format!(
            r#"{{"apiVersion":"workload.codeflare.dev/v1beta2","kind":"AppWrapper",
            "metadata":{{"name":"a","namespace":"n"}},
            "spec":{{"components":[{{"template":{{"{token}":"b","apiVersion":"v1","kind":"Pod",
            "spec":{{"x":{{"{token}":"[1]"}}}}}}}}]}}}}"#
        );
        let aw: AppWrapper = serde_json::from_str(&text).unwrap();
        let template = &aw.spec.components[0].template;
        assert_eq!(template[token], "b");
        assert_eq!(template["spec"]["x"][token], "[1]");
        let back = serde_json::to_value(&aw).unwrap();
        assert_eq!(back["spec"]["components"][0]["template"][token], "b");
    }
}
