//! PodSet inference for known GVKs (§5.4). Unknown GVKs infer nothing.

use std::collections::BTreeMap;

use serde_json::Value;

use super::PodSetError;
use super::path::resolve;
use super::pod_template::check_pod_template;
use super::replicas::{inferred_replicas, optional_int};
use super::template::{api_version, kind};
use crate::api::AppWrapperPodSet;

pub const TAS_POD_INDEX_LABEL: &str = "workload.codeflare.dev.appwrapper/tas-pod-index-label";
pub const TAS_SUB_GROUP_INDEX_LABEL: &str =
    "workload.codeflare.dev.appwrapper/tas-sub-group-index-label";
pub const TAS_SUB_GROUP_COUNT: &str = "workload.codeflare.dev.appwrapper/tas-sub-group-count";

const JOB_COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
const JOBSET_JOB_INDEX: &str = "jobset.sigs.k8s.io/job-index";
const KUBEFLOW_REPLICA_INDEX: &str = "training.kubeflow.org/replica-index";

/// Infers the PodSets of a decoded template; every inferred path must refer to a PodSpecTemplate.
pub fn infer_pod_sets(template: &Value) -> Result<Vec<AppWrapperPodSet>, PodSetError> {
    let pod_sets = match (api_version(template), kind(template)) {
        ("v1", "Pod") => vec![pod_set("template", 1, &[])],
        ("apps/v1", "Deployment" | "StatefulSet") => {
            let path = "template.spec.template";
            if resolve(template, path).is_ok() {
                let replicas = inferred_replicas(template, "template.spec.replicas")?;
                vec![pod_set(path, replicas, &[])]
            } else {
                vec![]
            }
        }
        ("batch/v1", "Job") => vec![pod_set(
            "template.spec.template",
            job_pod_count(template, "template.spec"),
            &[(TAS_POD_INDEX_LABEL, JOB_COMPLETION_INDEX)],
        )],
        ("jobset.x-k8s.io/v1alpha2", "JobSet") => jobset(template),
        ("kubeflow.org/v1", "PyTorchJob") => pytorch_job(template)?,
        ("ray.io/v1", "RayCluster") => ray(template, "template.spec.")?,
        ("ray.io/v1", "RayJob") => ray(template, "template.spec.rayClusterSpec.")?,
        _ => vec![],
    };
    for pod_set in &pod_sets {
        check_pod_template(template, &pod_set.path).map_err(|source| {
            PodSetError::NotPodSpecTemplate {
                path: pod_set.path.clone(),
                source,
            }
        })?;
    }
    Ok(pod_sets)
}

fn pod_set(path: &str, replicas: i32, annotations: &[(&str, &str)]) -> AppWrapperPodSet {
    AppWrapperPodSet {
        annotations: annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        path: path.to_string(),
        replicas: Some(replicas),
    }
}

/// Pods of one Job run: `parallelism` (default 1), lowered to `completions` when that is smaller.
fn job_pod_count(template: &Value, job_spec: &str) -> i32 {
    let parallelism = optional_int(template, &format!("{job_spec}.parallelism")).unwrap_or(1);
    match optional_int(template, &format!("{job_spec}.completions")) {
        Some(completions) if completions < parallelism => completions,
        _ => parallelism,
    }
}

fn jobset(template: &Value) -> Vec<AppWrapperPodSet> {
    let Some(jobs) = resolve(template, "template.spec.replicatedJobs")
        .ok()
        .and_then(Value::as_array)
    else {
        return vec![];
    };
    (0..jobs.len())
        .map(|i| format!("template.spec.replicatedJobs[{i}]."))
        .filter(|prefix| resolve(template, &format!("{prefix}template")).is_ok())
        .map(|prefix| {
            let pod_count = job_pod_count(template, &format!("{prefix}template.spec"));
            let replicas = optional_int(template, &format!("{prefix}replicas")).unwrap_or(1);
            let sub_group_count = replicas.to_string();
            pod_set(
                &format!("{prefix}template.spec.template"),
                replicas.wrapping_mul(pod_count),
                &[
                    (TAS_POD_INDEX_LABEL, JOB_COMPLETION_INDEX),
                    (TAS_SUB_GROUP_INDEX_LABEL, JOBSET_JOB_INDEX),
                    (TAS_SUB_GROUP_COUNT, &sub_group_count),
                ],
            )
        })
        .collect()
}

fn pytorch_job(template: &Value) -> Result<Vec<AppWrapperPodSet>, PodSetError> {
    let mut pod_sets = vec![];
    for replica_type in ["Master", "Worker"] {
        let prefix = format!("template.spec.pytorchReplicaSpecs.{replica_type}.");
        let path = format!("{prefix}template");
        if resolve(template, &path).is_ok() {
            let replicas = inferred_replicas(template, &format!("{prefix}replicas"))?;
            pod_sets.push(pod_set(
                &path,
                replicas,
                &[(TAS_POD_INDEX_LABEL, KUBEFLOW_REPLICA_INDEX)],
            ));
        }
    }
    Ok(pod_sets)
}

/// RayCluster / RayJob: the head group always (one pod), then every worker group with a template.
fn ray(template: &Value, cluster_spec: &str) -> Result<Vec<AppWrapperPodSet>, PodSetError> {
    let mut pod_sets = vec![pod_set(
        &format!("{cluster_spec}headGroupSpec.template"),
        1,
        &[],
    )];
    let workers = resolve(template, &format!("{cluster_spec}workerGroupSpecs"))
        .ok()
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    for i in 0..workers {
        let prefix = format!("{cluster_spec}workerGroupSpecs[{i}].");
        let path = format!("{prefix}template");
        if resolve(template, &path).is_ok() {
            let replicas = inferred_replicas(template, &format!("{prefix}replicas"))?;
            pod_sets.push(pod_set(&path, replicas, &[]));
        }
    }
    Ok(pod_sets)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    fn pod_spec() -> Value {
        json!({"containers": [{"name": "c", "image": "busybox"}]})
    }

    fn pod_template() -> Value {
        json!({"metadata": {"labels": {"a": "b"}}, "spec": pod_spec()})
    }

    fn summary(pod_sets: &[AppWrapperPodSet]) -> Vec<(String, Option<i32>)> {
        pod_sets
            .iter()
            .map(|p| (p.path.clone(), p.replicas))
            .collect()
    }

    fn expect(pairs: &[(&str, i32)]) -> Vec<(String, Option<i32>)> {
        pairs
            .iter()
            .map(|(p, r)| (p.to_string(), Some(*r)))
            .collect()
    }

    #[rstest]
    #[case::pod(json!({"apiVersion": "v1", "kind": "Pod", "spec": pod_spec()}), expect(&[("template", 1)]))]
    #[case::deployment(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 3, "template": pod_template()}}),
        expect(&[("template.spec.template", 3)]))]
    #[case::deployment_default(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": pod_template()}}),
        expect(&[("template.spec.template", 1)]))]
    #[case::deployment_without_template(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 3}}), expect(&[]))]
    #[case::statefulset(json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 2, "template": pod_template()}}),
        expect(&[("template.spec.template", 2)]))]
    #[case::job_default(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": pod_template()}}),
        expect(&[("template.spec.template", 1)]))]
    #[case::job_parallelism(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "template": pod_template()}}),
        expect(&[("template.spec.template", 4)]))]
    #[case::job_fewer_completions(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "completions": 2, "template": pod_template()}}),
        expect(&[("template.spec.template", 2)]))]
    #[case::job_more_completions(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "completions": 9, "template": pod_template()}}),
        expect(&[("template.spec.template", 4)]))]
    #[case::job_completions_without_parallelism(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"completions": 0, "template": pod_template()}}),
        expect(&[("template.spec.template", 0)]))]
    #[case::job_float_parallelism_ignored(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4.0, "template": pod_template()}}),
        expect(&[("template.spec.template", 1)]))]
    #[case::pytorch(json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
            "Worker": {"replicas": 3, "template": pod_template()},
            "Master": {"template": pod_template()}
        }}}),
        expect(&[("template.spec.pytorchReplicaSpecs.Master.template", 1), ("template.spec.pytorchReplicaSpecs.Worker.template", 3)]))]
    #[case::pytorch_workers_only(json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
            "Worker": {"replicas": 2, "template": pod_template()}
        }}}),
        expect(&[("template.spec.pytorchReplicaSpecs.Worker.template", 2)]))]
    #[case::raycluster(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {
            "headGroupSpec": {"template": pod_template()},
            "workerGroupSpecs": [{"replicas": 2, "minReplicas": 9, "template": pod_template()}, {"groupName": "no-template"}, {"template": pod_template()}]
        }}),
        expect(&[("template.spec.headGroupSpec.template", 1), ("template.spec.workerGroupSpecs[0].template", 2), ("template.spec.workerGroupSpecs[2].template", 1)]))]
    #[case::rayjob(json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"rayClusterSpec": {
            "headGroupSpec": {"template": pod_template()},
            "workerGroupSpecs": [{"replicas": 4, "template": pod_template()}]
        }}}),
        expect(&[("template.spec.rayClusterSpec.headGroupSpec.template", 1), ("template.spec.rayClusterSpec.workerGroupSpecs[0].template", 4)]))]
    #[case::unknown_gvk(json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"template": pod_template()}}), expect(&[]))]
    #[case::inexact_version(json!({"apiVersion": "batch/v1beta1", "kind": "Job", "spec": {"template": pod_template()}}), expect(&[]))]
    #[case::inexact_kind(json!({"apiVersion": "v1", "kind": "pod", "spec": pod_spec()}), expect(&[]))]
    fn infers_known_kinds(#[case] template: Value, #[case] expected: Vec<(String, Option<i32>)>) {
        let inferred = infer_pod_sets(&template).map(|p| summary(&p));
        assert_eq!(inferred, Ok(expected));
    }

    #[test]
    fn jobset_multiplies_replicas_by_pods_per_job_and_annotates() {
        let template = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": [
            {"name": "a", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2, "template": pod_template()}}},
            {"name": "skipped"},
            {"name": "b", "template": {"spec": {"template": pod_template()}}}
        ]}});
        let inferred = infer_pod_sets(&template).unwrap_or_default();
        assert_eq!(
            summary(&inferred),
            expect(&[
                ("template.spec.replicatedJobs[0].template.spec.template", 6),
                ("template.spec.replicatedJobs[2].template.spec.template", 1),
            ])
        );
        let annotations: BTreeMap<String, String> = [
            (
                TAS_POD_INDEX_LABEL,
                "batch.kubernetes.io/job-completion-index",
            ),
            (TAS_SUB_GROUP_INDEX_LABEL, "jobset.sigs.k8s.io/job-index"),
            (TAS_SUB_GROUP_COUNT, "3"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(inferred[0].annotations, annotations);
        assert_eq!(
            inferred[1]
                .annotations
                .get(TAS_SUB_GROUP_COUNT)
                .map(String::as_str),
            Some("1")
        );
    }

    #[rstest]
    #[case::job(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": pod_template()}}), Some("batch.kubernetes.io/job-completion-index"))]
    #[case::pytorch(json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Master": {"template": pod_template()}}}}),
        Some("training.kubeflow.org/replica-index"))]
    #[case::deployment(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": pod_template()}}), None)]
    #[case::ray(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {"headGroupSpec": {"template": pod_template()}}}), None)]
    fn pod_index_label_annotation(#[case] template: Value, #[case] label: Option<&str>) {
        let inferred = infer_pod_sets(&template).unwrap_or_default();
        assert_eq!(inferred.len(), 1);
        assert_eq!(
            inferred[0]
                .annotations
                .get(TAS_POD_INDEX_LABEL)
                .map(String::as_str),
            label
        );
        assert_eq!(inferred[0].annotations.len(), usize::from(label.is_some()));
    }

    #[rstest]
    #[case::job_without_template(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {}}),
        "template.spec.template does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing field 'template'")]
    #[case::ray_without_head(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {}}),
        "template.spec.headGroupSpec.template does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing field 'headGroupSpec'")]
    #[case::pod_without_spec(json!({"apiVersion": "v1", "kind": "Pod"}),
        "template does not refer to a v1.PodSpecTemplate: content at template does not contain a spec")]
    #[case::pod_with_bad_spec(json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containerz": []}}),
        "template does not refer to a v1.PodSpecTemplate: content at template.spec not parseable as a v1.PodSpec: strict decoding error: unknown field \"containerz\"")]
    #[case::deployment_float_replicas(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1.5, "template": pod_template()}}),
        "at path position 'template.spec.replicas' non-int value 1.5")]
    #[case::pytorch_string_replicas(json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": "2", "template": pod_template()}}}}),
        "at path position 'template.spec.pytorchReplicaSpecs.Worker.replicas' non-int value 2")]
    #[case::ray_worker_bad_replicas(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {"headGroupSpec": {"template": pod_template()}, "workerGroupSpecs": [{"replicas": 2.0, "template": pod_template()}]}}),
        "at path position 'template.spec.workerGroupSpecs[0].replicas' non-int value 2")]
    fn inference_fails(#[case] template: Value, #[case] message: &str) {
        assert_eq!(
            infer_pod_sets(&template).map_err(|e| e.to_string()),
            Err(message.to_string())
        );
    }
}
