//! Kueue objects the suite creates: flavors, queues and priority classes.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::KueueError;
use crate::cluster::ClusterError;

pub const API_VERSION: &str = "kueue.x-k8s.io/v1beta2";

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: API_VERSION.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Quota of a ClusterQueue's single flavor.
#[derive(Clone, Debug)]
pub struct Quota {
    pub cpu: String,
    pub memory: String,
    pub gpus: u32,
}

impl Default for Quota {
    fn default() -> Self {
        Self {
            cpu: "64".into(),
            memory: "256Gi".into(),
            gpus: 8,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct ClusterQueueSpec {
    pub flavor: String,
    pub quota: Quota,
    pub cohort: Option<String>,
    /// `withinClusterQueue` preemption: `Never`, `LowerPriority` or `LowerOrNewerEqualPriority`.
    pub preemption: Option<String>,
}

pub fn resource_flavor(name: &str) -> Value {
    json!({ "apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": { "name": name }, "spec": {} })
}

pub fn cluster_queue(name: &str, spec: &ClusterQueueSpec) -> Value {
    let q = &spec.quota;
    let mut body = json!({
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [{
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{ "name": spec.flavor, "resources": [
                { "name": "cpu", "nominalQuota": q.cpu },
                { "name": "memory", "nominalQuota": q.memory },
                { "name": "nvidia.com/gpu", "nominalQuota": q.gpus },
            ]}],
        }],
    });
    if let Some(cohort) = &spec.cohort {
        body["cohortName"] = json!(cohort);
    }
    if let Some(policy) = &spec.preemption {
        body["preemption"] =
            json!({ "withinClusterQueue": policy, "reclaimWithinCohort": "Never" });
    }
    json!({ "apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": { "name": name }, "spec": body })
}

pub fn local_queue(namespace: &str, name: &str, cluster_queue: &str) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": "LocalQueue",
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "clusterQueue": cluster_queue },
    })
}

pub fn workload_priority_class(name: &str, value: i32) -> Value {
    json!({ "apiVersion": API_VERSION, "kind": "WorkloadPriorityClass", "metadata": { "name": name }, "value": value })
}

/// Server-side applies one of the objects above.
pub async fn apply(client: &kube::Client, object: &Value) -> Result<(), ClusterError> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let (plural, namespaced) = match kind {
        "ResourceFlavor" => ("resourceflavors", false),
        "ClusterQueue" => ("clusterqueues", false),
        "LocalQueue" => ("localqueues", true),
        "WorkloadPriorityClass" => ("workloadpriorityclasses", false),
        other => {
            return Err(KueueError::NotAKueueKind(other.to_string()).into());
        }
    };
    let ar = resource(kind, plural);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = match object["metadata"]["namespace"].as_str() {
        Some(ns) if namespaced => ns,
        _ => "",
    };
    let api: Api<DynamicObject> = if namespace.is_empty() {
        Api::all_with(client.clone(), &ar)
    } else {
        Api::namespaced_with(client.clone(), namespace, &ar)
    };
    let params = PatchParams::apply("awconf").force();
    let patch = Patch::Apply(object);
    crate::webhook_retry::write(namespace, || api.patch(name, &params, &patch)).await?;
    Ok(())
}

/// The LocalQueue every test namespace submits to.
pub const TEST_QUEUE: &str = "queue";

/// A ClusterQueue named after `namespace` and the LocalQueue [`TEST_QUEUE`] in it pointing there.
pub async fn namespace_queue(
    client: &kube::Client,
    namespace: &str,
    spec: &ClusterQueueSpec,
) -> Result<(), ClusterError> {
    apply(client, &cluster_queue(namespace, spec)).await?;
    apply(client, &local_queue(namespace, TEST_QUEUE, namespace)).await
}

/// The Kueue API resources by kind, for reading Workloads and queues in tests.
pub fn api_resource(kind: &str) -> ApiResource {
    let plural = format!("{}s", kind.to_lowercase());
    let plural = plural.replace("classs", "classes");
    resource(kind, &plural)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_queue_covers_gpus_and_takes_cohort_and_preemption() {
        let spec = ClusterQueueSpec {
            flavor: "f".into(),
            quota: Quota {
                cpu: "4".into(),
                memory: "8Gi".into(),
                gpus: 2,
            },
            cohort: Some("c".into()),
            preemption: Some("LowerPriority".into()),
        };
        let cq = cluster_queue("cq", &spec);
        assert_eq!(
            cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"],
            2
        );
        assert_eq!(cq["spec"]["cohortName"], "c");
        assert_eq!(
            cq["spec"]["preemption"]["withinClusterQueue"],
            "LowerPriority"
        );
        assert!(
            cluster_queue("x", &ClusterQueueSpec::default())["spec"]
                .get("preemption")
                .is_none()
        );
    }

    #[test]
    fn plurals_of_kueue_kinds() {
        assert_eq!(api_resource("Workload").plural, "workloads");
        assert_eq!(
            api_resource("WorkloadPriorityClass").plural,
            "workloadpriorityclasses"
        );
    }
}
