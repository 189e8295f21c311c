use std::collections::BTreeMap;

use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::api::AppWrapper;
use crate::webhook::{Access, ErrorType, FieldError, access_requests, validate_create};

fn errors(aw: &AppWrapper) -> Vec<FieldError> {
    validate_create(aw, &BTreeMap::new())
}

fn summary(errors: &[FieldError]) -> Vec<(String, ErrorType)> {
    errors.iter().map(|e| (e.field.clone(), e.kind)).collect()
}

fn ps(path: &str) -> Value {
    json!([{"path": path}])
}

#[rstest]
#[case::pod(one(pod()))]
#[case::deployment(one(deployment(2)))]
#[case::statefulset(one(json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 2, "template": pod_template()}})))]
#[case::job_inferred(one(json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 2, "completions": 4, "template": pod_template()}})))]
#[case::pod_declared(appwrapper(vec![(pod(), ps("template"))]))]
#[case::pod_with_matching_namespace(one(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}, "spec": pod_spec()})))]
#[case::jobset_declared(appwrapper(vec![(jobset(), json!([
    {"path": "template.spec.replicatedJobs[0].template.spec.template", "replicas": 1},
    {"path": "template.spec.replicatedJobs[1].template.spec.template", "replicas": 1}]))]))]
#[case::pytorchjob(one(json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
    "Master": {"replicas": 1, "template": pod_template()}, "Worker": {"replicas": 4, "template": pod_template()}}}})))]
#[case::raycluster(one(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {
    "headGroupSpec": {"template": pod_template()}, "workerGroupSpecs": [{"replicas": 7, "template": pod_template()}]}})))]
#[case::rayjob(one(json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"rayClusterSpec": {
    "headGroupSpec": {"template": pod_template()}, "workerGroupSpecs": [{"replicas": 7, "template": pod_template()}]}}})))]
#[case::unknown_kind_with_declared_pod_set(appwrapper(vec![(json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"template": pod_template()}}), ps("template.spec.template"))]))]
#[case::service_beside_a_pod(appwrapper(vec![(json!({"apiVersion": "v1", "kind": "Service", "spec": {}}), json!([])), (pod(), json!([]))]))]
#[case::eight_pods(appwrapper(vec![(pod(), json!([])); 8]))]
#[case::appwrapper_of_another_version_is_not_nested(appwrapper(vec![
    (json!({"apiVersion": "workload.codeflare.dev/v1beta1", "kind": "AppWrapper", "spec": {"components": []}}), json!([])),
    (pod(), json!([]))]))]
#[case::another_kind_of_the_appwrapper_version_is_not_nested(appwrapper(vec![
    (json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapperTemplate", "spec": {}}), json!([])),
    (pod(), json!([]))]))]
fn accepts(#[case] aw: AppWrapper) {
    assert_eq!(errors(&aw), []);
}

#[rstest]
#[case::no_components(appwrapper(vec![]),
    &[("spec.components", ErrorType::Invalid)], "components contains no podspecs")]
#[case::only_a_service(one(json!({"apiVersion": "v1", "kind": "Service", "spec": {}})),
    &[("spec.components", ErrorType::Invalid)], "components contains no podspecs")]
#[case::nine_pods(appwrapper(vec![(pod(), json!([])); 9]),
    &[("spec.components", ErrorType::Invalid)], "components contains 9 podspecs; at most 8 are allowed")]
#[case::template_without_kind(appwrapper(vec![(json!({"apiVersion": "v1"}), json!([])), (pod(), json!([]))]),
    &[("spec.components[0].template", ErrorType::Invalid)], "failed to decode as JSON")]
#[case::nested_appwrapper(appwrapper(vec![(json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "spec": {"components": []}}), json!([])), (pod(), json!([]))]),
    &[("spec.components[0].template", ErrorType::Forbidden)], "Nested AppWrappers are forbidden")]
#[case::other_namespace(one(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "test"}, "spec": pod_spec()})),
    &[("spec.components[0].template.metadata.namespace", ErrorType::Forbidden)], "AppWrappers cannot create objects in other namespaces")]
#[case::missing_path(appwrapper(vec![(deployment(1), ps("template.spec.missing"))]),
    &[("spec.components[0].podSets[0].path", ErrorType::Invalid), ("spec.components[0].podSets", ErrorType::Invalid)],
    "path does not refer to a v1.PodSpecTemplate: at path position 'template.spec.' missing field 'missing'")]
#[case::empty_path(appwrapper(vec![(deployment(1), ps(""))]),
    &[("spec.components[0].podSets[0].path", ErrorType::Required), ("spec.components[0].podSets[0].path", ErrorType::Invalid), ("spec.components[0].podSets", ErrorType::Invalid)],
    "podspec must specify path")]
#[case::path_to_metadata(appwrapper(vec![(deployment(1), ps("template.spec.template.metadata"))]),
    &[("spec.components[0].podSets[0].path", ErrorType::Invalid), ("spec.components[0].podSets", ErrorType::Invalid)],
    "does not contain a spec")]
#[case::replicas_disagree(appwrapper(vec![(deployment(2), json!([{"path": "template.spec.template", "replicas": 3}]))]),
    &[("spec.components[0].podSets", ErrorType::Invalid)],
    "replica count 3 differs from inferred count 2 for PodSet at path position 'template.spec.template'")]
#[case::count_disagrees(appwrapper(vec![(jobset(), json!([{"path": "template.spec.replicatedJobs[0].template.spec.template"}]))]),
    &[("spec.components[0].podSets", ErrorType::Invalid)], "DeclaredPodSet count 1 differs from inferred count 2")]
#[case::duplicate_declared(appwrapper(vec![(pod(), json!([{"path": "template"}, {"path": "template"}]))]),
    &[("spec.components[0].podSets", ErrorType::Invalid)], "multiple DeclaredPodSets with path 'template'")]
#[case::inference_fails(one(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "two", "template": pod_template()}})),
    &[("spec.components[0].template", ErrorType::Invalid), ("spec.components", ErrorType::Invalid)], "error inferring PodSets: at path position 'template.spec.replicas' non-int value two")]
#[case::strict_pod_spec(appwrapper(vec![(json!({"apiVersion": "example.com/v1", "kind": "Thing", "spec": {"template": {"spec": {"containerz": []}}}}), ps("template.spec.template"))]),
    &[("spec.components[0].podSets[0].path", ErrorType::Invalid)], "unknown field \"containerz\"")]
fn rejects(#[case] aw: AppWrapper, #[case] expected: &[(&str, ErrorType)], #[case] detail: &str) {
    let found = errors(&aw);
    let expected: Vec<_> = expected.iter().map(|(f, t)| (f.to_string(), *t)).collect();
    assert_eq!(summary(&found), expected, "{found:#?}");
    assert!(
        found.iter().any(|e| e.detail.contains(detail)),
        "no error says {detail:?}: {found:#?}"
    );
}

#[rstest]
#[case::index_without_field("template.spec.replicatedJobs.template.spec.template")]
#[case::list_itself("template.spec.replicatedJobs")]
#[case::index_on_a_map("template.spec.replicatedJobs[0].template[0].spec.template")]
#[case::out_of_bounds("template.spec.replicatedJobs[10].template.spec.template")]
#[case::negative("template.spec.replicatedJobs[-1].template.spec.template")]
#[case::not_a_number("template.spec.replicatedJobs[a10].template.spec.template")]
#[case::unterminated("template.spec.replicatedJobs[1")]
#[case::doubled_bracket("template.spec.replicatedJobs[1]].template.spec.template")]
fn rejects_malformed_array_and_map_paths(#[case] path: &str) {
    let aw = appwrapper(vec![(
        jobset(),
        json!([
            {"path": path},
            {"path": "template.spec.replicatedJobs[1].template.spec.template"}
        ]),
    )]);
    let found = errors(&aw);
    assert!(
        found.iter().any(
            |e| e.field == "spec.components[0].podSets[0].path" && e.kind == ErrorType::Invalid
        ),
        "{found:#?}"
    );
}

#[test]
fn rbac_outcomes_are_placed_on_their_component() {
    let aw = appwrapper(vec![(pod(), json!([])), (deployment(1), json!([]))]);
    let requests: Vec<_> = access_requests(&aw)
        .into_iter()
        .map(|(i, gvk)| (i, gvk.group, gvk.version, gvk.kind))
        .collect();
    assert_eq!(
        requests,
        [
            (0, "".into(), "v1".into(), "Pod".into()),
            (1, "apps".into(), "v1".into(), "Deployment".into())
        ]
    );
    let access = BTreeMap::from([
        (0, Access::Allowed),
        (
            1,
            Access::Denied {
                user: "limited-user".into(),
                resource: "deployments".into(),
                namespace: "default".into(),
            },
        ),
    ]);
    let found = validate_create(&aw, &access);
    assert_eq!(
        found.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "spec.components[1].template: Forbidden: User limited-user is not authorized to create deployments in default"
        ]
    );
    let failed = BTreeMap::from([(0, Access::Failed("connection refused".into()))]);
    let found = validate_create(&aw, &failed);
    assert_eq!(
        summary(&found),
        [(
            "spec.components[0].template".to_string(),
            ErrorType::Internal
        )]
    );
}

#[test]
fn templates_that_do_not_decode_get_no_access_review() {
    let aw = appwrapper(vec![
        (json!({"apiVersion": "v1"}), json!([])),
        (pod(), json!([])),
    ]);
    let indices: Vec<_> = access_requests(&aw).into_iter().map(|(i, _)| i).collect();
    assert_eq!(indices, [1]);
}
