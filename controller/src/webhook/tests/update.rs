use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::api::AppWrapper;
use crate::webhook::{ErrorType, IMMUTABLE, validate_update};

fn base() -> AppWrapper {
    let mut aw = appwrapper(vec![(
        deployment(2),
        json!([{"path": "template.spec.template", "replicas": 2}]),
    )]);
    aw.metadata.labels = Some(
        [
            (
                "workload.codeflare.dev/user".to_string(),
                "alice".to_string(),
            ),
            (
                "workload.codeflare.dev/userid".to_string(),
                "42".to_string(),
            ),
        ]
        .into(),
    );
    aw
}

fn changed(f: impl FnOnce(&mut AppWrapper)) -> AppWrapper {
    let mut aw = base();
    f(&mut aw);
    aw
}

fn set_label(aw: &mut AppWrapper, key: &str, value: Option<&str>) {
    let labels = aw.metadata.labels.get_or_insert_default();
    match value {
        Some(v) => labels.insert(key.to_string(), v.to_string()),
        None => labels.remove(key),
    };
}

#[rstest]
#[case::suspend(changed(|aw| aw.spec.suspend = true))]
#[case::pod_set_infos(changed(|aw| aw.spec.components[0].pod_set_infos = vec![Default::default()]))]
#[case::component_annotations(changed(|aw| { aw.spec.components[0].annotations.insert("a".into(), "b".into()); }))]
#[case::pod_set_annotations(changed(|aw| { aw.spec.components[0].declared_pod_sets[0].annotations.insert("a".into(), "b".into()); }))]
#[case::other_labels(changed(|aw| set_label(aw, "app", Some("x"))))]
#[case::finalizers(changed(|aw| aw.metadata.finalizers = Some(vec!["workload.codeflare.dev/finalizer".into()])))]
#[case::status(changed(|aw| aw.status = Some(Default::default())))]
fn mutable(#[case] new: AppWrapper) {
    assert_eq!(validate_update(&base(), &new), []);
}

fn replace_template(aw: &mut AppWrapper, template: Value) {
    aw.spec.components[0].template = template;
}

#[rstest]
#[case::component_added(changed(|aw| aw.spec.components.push(aw.spec.components[0].clone())), &["spec.components"])]
#[case::template_replaced(changed(|aw| replace_template(aw, deployment(3))), &["spec.components[0].template.raw"])]
#[case::pod_set_duplicated(changed(|aw| { let p = aw.spec.components[0].declared_pod_sets[0].clone(); aw.spec.components[0].declared_pod_sets.push(p); }),
    &["spec.components[0].podsets"])]
#[case::pod_set_path(changed(|aw| aw.spec.components[0].declared_pod_sets[0].path = "template.spec".into()),
    &["spec.components[0].podsets[0].path"])]
#[case::pod_set_replicas(changed(|aw| aw.spec.components[0].declared_pod_sets[0].replicas = Some(1)),
    &["spec.components[0].podsets[0].replicas"])]
#[case::user_label(changed(|aw| set_label(aw, "workload.codeflare.dev/user", Some("mallory"))),
    &["metadata.labels[workload.codeflare.dev/user]"])]
#[case::userid_label_removed(changed(|aw| set_label(aw, "workload.codeflare.dev/userid", None)),
    &["metadata.labels[workload.codeflare.dev/userid]"])]
#[case::managed_by_set(changed(|aw| aw.spec.managed_by = Some("kueue.x-k8s.io/multikueue".into())), &["spec.managedBy"])]
#[case::several_at_once(changed(|aw| { replace_template(aw, deployment(3)); aw.spec.managed_by = Some("x".into()); }),
    &["spec.components[0].template.raw", "spec.managedBy"])]
fn immutable(#[case] new: AppWrapper, #[case] fields: &[&str]) {
    let found = validate_update(&base(), &new);
    assert_eq!(
        found.iter().map(|e| e.field.as_str()).collect::<Vec<_>>(),
        fields
    );
    assert!(
        found
            .iter()
            .all(|e| e.kind == ErrorType::Forbidden && e.detail == IMMUTABLE)
    );
}

#[test]
fn absent_replicas_equal_one_and_absent_labels_equal_empty() {
    let mut old = base();
    old.spec.components[0].declared_pod_sets[0].replicas = None;
    set_label(&mut old, "workload.codeflare.dev/user", None);
    let mut new = old.clone();
    new.spec.components[0].declared_pod_sets[0].replicas = Some(1);
    set_label(&mut new, "workload.codeflare.dev/user", Some(""));
    assert_eq!(validate_update(&old, &new), []);
}
