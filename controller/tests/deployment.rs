//! What lets the controller replace the reference in its Deployment, on the embedded cluster:
//! the configuration ConfigMap, created when missing and otherwise laid over the defaults;
//! core/v1 events, which the reference's ClusterRole allows; and wrapped objects of a
//! cluster-scoped kind, created and deleted through their scope.

mod ops_support;

use appwrapper_controller::api::{AppWrapper, Phase};
use appwrapper_controller::config::Config;
use appwrapper_controller::config::config_map::{
    ConfigMapError, DEFAULT_NAME, KEY, load_or_create,
};
use clusters::Cluster;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use ops_support::*;
use serde_json::{Value, json};

async fn client(ns: &str) -> kube::Client {
    let client = clusters::providers::local::shared()
        .unwrap()
        .client()
        .await
        .unwrap();
    namespace(&client, ns).await;
    client
}

/// An AppWrapper that runs at once (no Kueue here) with one component per template.
fn running_appwrapper(name: &str, templates: Vec<Value>) -> AppWrapper {
    let mut aw = appwrapper(
        name,
        templates.into_iter().map(|t| (t, json!([]))).collect(),
    );
    aw.spec.suspend = false;
    aw
}

#[tokio::test]
async fn a_missing_config_map_is_created_with_the_defaults_and_then_laid_over_them() {
    let ns = "deployment-config";
    let client = client(ns).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let defaults = Config::defaults_in(ns);

    let first = load_or_create(&client, ns, DEFAULT_NAME, &defaults)
        .await
        .unwrap();
    assert_eq!(first, defaults);
    let created = config_maps.get(DEFAULT_NAME).await.unwrap();
    let data = created.data.unwrap_or_default();
    assert_eq!(data.keys().collect::<Vec<_>>(), [KEY]);
    assert_eq!(defaults.overlaid(&data[KEY]).unwrap(), defaults);

    let document = "appwrapper:\n  autopilot:\n    resourceTaints:\n      example.com/fpga: []\n  faultTolerance:\n    retryLimit: 7\n";
    let mut edited = config_maps.get(DEFAULT_NAME).await.unwrap();
    edited.data = Some([(KEY.to_owned(), document.to_owned())].into());
    config_maps
        .replace(DEFAULT_NAME, &PostParams::default(), &edited)
        .await
        .unwrap();
    let second = load_or_create(&client, ns, DEFAULT_NAME, &defaults)
        .await
        .unwrap();
    assert_eq!(second.appwrapper.fault_tolerance.retry_limit, 7);
    let taints = second.appwrapper.autopilot.unwrap().resource_taints;
    assert_eq!(
        taints.keys().collect::<Vec<_>>(),
        ["example.com/fpga", "nvidia.com/gpu"]
    );
    assert_eq!(taints["nvidia.com/gpu"].len(), 3);
}

#[tokio::test]
async fn a_config_map_with_two_entries_cannot_be_resolved() {
    let ns = "deployment-config-two";
    let client = client(ns).await;
    let two = ConfigMap {
        metadata: ObjectMeta {
            name: Some("two-entries".into()),
            ..ObjectMeta::default()
        },
        data: Some([("a".into(), String::new()), ("b".into(), String::new())].into()),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &two)
        .await
        .unwrap();
    let err = load_or_create(&client, ns, "two-entries", &Config::defaults_in(ns))
        .await
        .unwrap_err();
    assert!(matches!(err, ConfigMapError::Unresolvable { .. }), "{err}");
}

#[tokio::test]
async fn events_are_core_events_as_the_reference_emits_them() {
    controller();
    let ns = "deployment-events";
    let client = client(ns).await;
    let unserved =
        json!({"apiVersion": "example.com/v1", "kind": "Unserved", "metadata": {"name": "u"}});
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let aw = aws
        .create(
            &PostParams::default(),
            &running_appwrapper("unserved", vec![unserved]),
        )
        .await
        .unwrap();
    eventually(60, "phase Failed", || async {
        (aws.get("unserved").await.ok()?.status?.phase == Phase::Failed).then_some(())
    })
    .await;
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let event = eventually(30, "the CreateFailed event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("CreateFailed"))
    })
    .await;
    assert_eq!(event.action.as_deref(), Some("Unhealthy"));
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    let message = event.message.unwrap_or_default();
    assert!(
        message.starts_with("error creating components: no matches for kind \"Unserved\""),
        "{message}"
    );
    let source = event.source.unwrap_or_default();
    assert_eq!(source.component.as_deref(), Some("appwrappers"));
    assert_eq!(event.count, Some(1));
    assert_eq!(event.involved_object.kind.as_deref(), Some("AppWrapper"));
    assert_eq!(event.involved_object.uid, aw.metadata.uid);
}

#[tokio::test]
async fn a_cluster_scoped_component_is_created_and_deleted_through_its_scope() {
    controller();
    let ns = "deployment-cluster-scoped";
    let client = client(ns).await;
    let priority = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "deployment-wrapped-priority"}, "value": 1000});
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    aws.create(
        &PostParams::default(),
        &running_appwrapper("cluster-scoped", vec![priority]),
    )
    .await
    .unwrap();
    let classes: Api<PriorityClass> = Api::all(client.clone());
    let created = eventually(60, "the wrapped PriorityClass", || async {
        classes.get_opt("deployment-wrapped-priority").await.ok()?
    })
    .await;
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("workload.codeflare.dev/appwrapper")
            .map(String::as_str),
        Some("cluster-scoped")
    );
    eventually(60, "the components deployed", || async {
        let phase = aws.get("cluster-scoped").await.ok()?.status?.phase;
        matches!(phase, Phase::Running | Phase::Succeeded).then_some(())
    })
    .await;

    aws.delete("cluster-scoped", &DeleteParams::default())
        .await
        .unwrap();
    eventually(60, "the AppWrapper to be gone", || async {
        aws.get_opt("cluster-scoped")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        classes
            .get_opt("deployment-wrapped-priority")
            .await
            .unwrap()
            .is_none_or(|c| c.metadata.deletion_timestamp.is_some()),
        "the controller deletes the wrapped PriorityClass before it lets the AppWrapper go"
    );
}
