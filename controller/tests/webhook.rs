//! The admission webhooks served over HTTPS to the real API server of the embedded cluster and
//! registered by URL: every creation rule refuses with its field path, every supported kind is
//! accepted, the RBAC check follows the requesting user's Role, and sensitive fields are
//! immutable.

mod ops_support;

use std::sync::OnceLock;
use std::time::Duration;

use appwrapper_controller::api::{AppWrapper, QUEUE_NAME_LABEL, USER_LABEL, USERID_LABEL};
use appwrapper_controller::config::Config;
use appwrapper_controller::webhook::{ServerOptions, Webhooks, serve, webhook_configurations};
use clusters::Cluster;
use clusters::pki::Ca;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use ops_support::*;
use rstest::rstest;
use serde_json::{Value, json};

const DEFAULT_QUEUE: &str = "system-default-queue";

/// Starts the webhook server once per test process, on a runtime of its own, and registers it.
fn webhooks() {
    static STARTED: OnceLock<Result<(), String>> = OnceLock::new();
    let started = STARTED.get_or_init(|| {
        let cluster = clusters::providers::local::shared()?;
        clusters::testing::keep_running(move || start(cluster))
    });
    started.as_ref().expect("the webhook server started");
}

async fn start(
    cluster: &'static clusters::LocalCluster,
) -> anyhow::Result<appwrapper_controller::webhook::WebhookServer> {
    let client = cluster.client().await?;
    install_appwrapper_crd(&client).await?;
    let dir = cluster.work_dir().join("appwrapper-webhook");
    std::fs::create_dir_all(&dir)?;
    let ca = Ca::load(&cluster.work_dir().join("pki"), "ca")?;
    ca.serving("appwrapper-webhook", &[], &[])?
        .write(&dir, "tls")?;
    let mut config = Config::default();
    config.appwrapper.default_queue_name = DEFAULT_QUEUE.to_owned();
    let options = ServerOptions::in_dir(&dir, "127.0.0.1:0".parse()?);
    let server = serve(options, Webhooks::new(&config, client.clone())).await?;
    let url = format!("https://127.0.0.1:{}", server.local_addr().port());
    let (mutating, validating) = webhook_configurations(&url, &ca.pair.cert_pem);
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &mutating)
        .await?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &validating)
        .await?;
    wait_until_registered(&client).await?;
    Ok(server)
}

/// Registration takes effect asynchronously: dry-run until both webhooks answer.
async fn wait_until_registered(client: &kube::Client) -> anyhow::Result<()> {
    namespace(client, "webhook-probe").await;
    let api: Api<AppWrapper> = Api::namespaced(client.clone(), "webhook-probe");
    let dry_run = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mutated = api
            .create(&dry_run, &appwrapper("probe", vec![(pod("p"), json!([]))]))
            .await
            .is_ok_and(|aw| {
                aw.metadata
                    .labels
                    .is_some_and(|l| l.contains_key(USER_LABEL))
            });
        let nested = json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "spec": {"components": []}});
        let validated = api
            .create(&dry_run, &appwrapper("probe", vec![(nested, json!([]))]))
            .await
            .is_err();
        if mutated && validated {
            return Ok(());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the webhooks did not take effect within 60s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn admin(ns: &str) -> kube::Client {
    webhooks();
    let client = clusters::providers::local::shared()
        .unwrap()
        .client()
        .await
        .unwrap();
    namespace(&client, ns).await;
    client
}

fn jobset() -> Value {
    let job = |name: &str| json!({"name": name, "replicas": 1, "template": {"spec": {"parallelism": 1, "completions": 1, "template": pod_template()}}});
    json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
           "spec": {"replicatedJobs": [job("a"), job("b")]}})
}

fn declared(paths: &[&str]) -> Value {
    Value::Array(paths.iter().map(|p| json!({"path": p})).collect())
}

#[rstest]
#[case::no_components("no-components", vec![], "spec.components", "components contains no podspecs")]
#[case::only_a_service("only-service", vec![(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}), json!([]))],
    "spec.components", "components contains no podspecs")]
#[case::more_than_eight("nine-pods", (0..9).map(|i| (pod(&format!("p{i}")), json!([]))).collect(),
    "spec.components", "components contains 9 podspecs; at most 8 are allowed")]
#[case::nested_appwrapper("nested", vec![(json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "metadata": {"name": "inner"}, "spec": {"components": []}}), json!([])), (pod("p"), json!([]))],
    "spec.components[0].template", "Nested AppWrappers are forbidden")]
#[case::other_namespace("elsewhere", vec![(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "test"}, "spec": pod_spec()}), json!([]))],
    "spec.components[0].template.metadata.namespace", "AppWrappers cannot create objects in other namespaces")]
#[case::missing_path("missing-path", vec![(deployment("d", 1), declared(&["template.spec.missing"]))],
    "spec.components[0].podSets[0].path", "path does not refer to a v1.PodSpecTemplate")]
#[case::empty_path("empty-path", vec![(deployment("d", 1), declared(&[""]))],
    "spec.components[0].podSets[0].path", "podspec must specify path")]
#[case::not_a_pod_template("metadata-path", vec![(deployment("d", 1), declared(&["template.spec.template.metadata"]))],
    "spec.components[0].podSets[0].path", "does not contain a spec")]
#[case::out_of_bounds_index("index-10", vec![(jobset(), declared(&["template.spec.replicatedJobs[10].template.spec.template", "template.spec.replicatedJobs[1].template.spec.template"]))],
    "spec.components[0].podSets[0].path", "out of bounds index '10'")]
#[case::not_a_strict_pod_spec("strict", vec![(json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"template": {"spec": {"containerz": []}}}}), declared(&["template.spec.template"]))],
    "spec.components[0].podSets[0].path", "unknown field \"containerz\"")]
#[case::declared_disagrees_with_inferred("replicas", vec![(deployment("d", 2), json!([{"path": "template.spec.template", "replicas": 3}]))],
    "spec.components[0].podSets", "replica count 3 differs from inferred count 2")]
#[case::inference_fails("bad-replicas", vec![(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": "two", "template": pod_template()}}), json!([]))],
    "spec.components[0].template", "error inferring PodSets")]
#[tokio::test]
async fn each_creation_rule_refuses_with_its_field_path(
    #[case] name: &str,
    #[case] components: Vec<(Value, Value)>,
    #[case] field: &str,
    #[case] message: &str,
) {
    let ns = "webhook-rules";
    let client = admin(ns).await;
    let api: Api<AppWrapper> = Api::namespaced(client, ns);
    let status = refusal(
        api.create(&PostParams::default(), &appwrapper(name, components))
            .await,
    );
    assert!(
        status
            .message
            .contains("admission webhook \"vappwrapper.kb.io\" denied the request"),
        "{status:?}"
    );
    assert!(status.message.contains(&format!("{field}: ")), "{status:?}");
    assert!(status.message.contains(message), "{status:?}");
    assert_forbidden(&status);
    assert!(api.get_opt(name).await.unwrap().is_none());
}

fn ray_cluster_spec() -> Value {
    json!({"headGroupSpec": {"rayStartParams": {}, "template": pod_template()},
           "workerGroupSpecs": [{"groupName": "w", "replicas": 2, "minReplicas": 2, "maxReplicas": 2, "rayStartParams": {}, "template": pod_template()}]})
}

// The admin is in system:masters, so the RBAC check allows even kinds whose CRDs are not
// installed (the resource is then reviewed as `*`); no JobSet, PyTorchJob or Ray CRD is needed.
#[rstest]
#[case::pod("pod", pod("p"), json!([]))]
#[case::deployment("deployment", deployment("d", 2), json!([]))]
#[case::statefulset("statefulset", json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
    "spec": {"replicas": 2, "serviceName": "s", "selector": {"matchLabels": {"app": "aw"}}, "template": pod_template()}}), json!([]))]
#[case::job("job", json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "j-"},
    "spec": {"parallelism": 2, "completions": 4, "template": {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}), json!([]))]
#[case::jobset("jobset", jobset(), declared(&["template.spec.replicatedJobs[0].template.spec.template", "template.spec.replicatedJobs[1].template.spec.template"]))]
#[case::pytorchjob("pytorchjob", json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
    "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": pod_template()}, "Worker": {"replicas": 4, "template": pod_template()}}}}), json!([]))]
#[case::raycluster("raycluster", json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"}, "spec": ray_cluster_spec()}), json!([]))]
#[case::rayjob("rayjob", json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"},
    "spec": {"entrypoint": "python -c 'pass'", "rayClusterSpec": ray_cluster_spec()}}), json!([]))]
#[tokio::test]
async fn every_supported_kind_is_accepted_and_labelled(
    #[case] name: &str,
    #[case] template: Value,
    #[case] pod_sets: Value,
) {
    let ns = "webhook-kinds";
    let client = admin(ns).await;
    let api: Api<AppWrapper> = Api::namespaced(client, ns);
    let created = api
        .create(
            &PostParams::default(),
            &appwrapper(name, vec![(template, pod_sets)]),
        )
        .await
        .unwrap();
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get(USER_LABEL).map(String::as_str),
        Some("kube-admin")
    );
    assert_eq!(labels.get(USERID_LABEL).map(String::as_str), Some(""));
    assert_eq!(
        labels.get(QUEUE_NAME_LABEL).map(String::as_str),
        Some(DEFAULT_QUEUE)
    );
}

#[tokio::test]
async fn a_queue_name_and_user_labels_set_by_the_user_are_handled_as_the_spec_says() {
    let ns = "webhook-defaulting";
    let client = admin(ns).await;
    let api: Api<AppWrapper> = Api::namespaced(client, ns);
    let mut aw = appwrapper("labelled", vec![(pod("p"), json!([]))]);
    aw.metadata.labels = Some(
        [
            (QUEUE_NAME_LABEL, "user-provided-queue"),
            (USER_LABEL, "bad"),
            (USERID_LABEL, "bad"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    let created = api.create(&PostParams::default(), &aw).await.unwrap();
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(labels[QUEUE_NAME_LABEL], "user-provided-queue");
    assert_eq!(labels[USER_LABEL], "kube-admin");
    assert_eq!(labels[USERID_LABEL], "");
}

const LIMITED_USER: &str = "limited-user";

/// A client acting as `limited-user`, bound in `ns` to a Role that may create Pods and
/// AppWrappers but only get Deployments.
async fn limited_user(ns: &str, admin: &kube::Client) -> kube::Client {
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "pods-only"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
            {"apiGroups": ["workload.codeflare.dev"], "resources": ["appwrappers"], "verbs": ["*"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        ],
    }))
    .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "pods-only"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods-only"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": LIMITED_USER}],
    }))
    .unwrap();
    let apply = PatchParams::apply("webhook-test");
    Api::<Role>::namespaced(admin.clone(), ns)
        .patch("pods-only", &apply, &Patch::Apply(&role))
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .patch("pods-only", &apply, &Patch::Apply(&binding))
        .await
        .unwrap();
    let cluster = clusters::providers::local::shared().unwrap();
    let kubeconfig = Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    config.auth_info.impersonate = Some(LIMITED_USER.to_owned());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".to_owned()]);
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn a_user_who_may_create_pods_but_not_deployments_may_wrap_only_pods() {
    let ns = "webhook-rbac";
    let admin = admin(ns).await;
    let user = limited_user(ns, &admin).await;
    let api: Api<AppWrapper> = Api::namespaced(user, ns);

    let created = api
        .create(
            &PostParams::default(),
            &appwrapper("wraps-pod", vec![(pod("p"), json!([]))]),
        )
        .await
        .unwrap();
    assert_eq!(
        created.metadata.labels.unwrap_or_default()[USER_LABEL],
        LIMITED_USER
    );

    let status = refusal(
        api.create(
            &PostParams::default(),
            &appwrapper("wraps-deployment", vec![(deployment("d", 1), json!([]))]),
        )
        .await,
    );
    assert!(
        status.message.contains(&format!(
            "spec.components[0].template: Forbidden: User {LIMITED_USER} is not authorized to create deployments in {ns}"
        )),
        "{status:?}"
    );
    assert_forbidden(&status);

    // Updates by someone else keep the creator's labels.
    let admin_api: Api<AppWrapper> = Api::namespaced(admin, ns);
    let patched = admin_api
        .patch(
            "wraps-pod",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.labels.unwrap_or_default()[USER_LABEL],
        LIMITED_USER
    );
}

fn updatable() -> AppWrapper {
    appwrapper(
        "immutable",
        vec![(
            deployment("d", 2),
            json!([{"path": "template.spec.template", "replicas": 2}]),
        )],
    )
}

fn component(template: Value, pod_sets: Value) -> Value {
    json!({"template": template, "podSets": pod_sets})
}

#[rstest]
#[case::template_replaced("template",
    json!({"spec": {"components": [component(deployment("d", 3), json!([{"path": "template.spec.template", "replicas": 2}]))]}}),
    "spec.components[0].template.raw")]
#[case::component_appended("appended",
    json!({"spec": {"components": [component(deployment("d", 2), json!([{"path": "template.spec.template", "replicas": 2}])), component(pod("p"), json!([]))]}}),
    "spec.components")]
#[case::pod_set_duplicated("duplicated",
    json!({"spec": {"components": [component(deployment("d", 2), json!([{"path": "template.spec.template", "replicas": 2}, {"path": "template.spec.template", "replicas": 2}]))]}}),
    "spec.components[0].podsets")]
#[case::pod_set_path_changed("path",
    json!({"spec": {"components": [component(deployment("d", 2), json!([{"path": "template.spec", "replicas": 2}]))]}}),
    "spec.components[0].podsets[0].path")]
#[case::pod_set_replicas_changed("replicas",
    json!({"spec": {"components": [component(deployment("d", 2), json!([{"path": "template.spec.template", "replicas": 1}]))]}}),
    "spec.components[0].podsets[0].replicas")]
#[case::user_label_changed("user",
    json!({"metadata": {"labels": {"workload.codeflare.dev/user": "someone-else"}}}),
    "metadata.labels[workload.codeflare.dev/user]")]
#[case::userid_label_changed("userid",
    json!({"metadata": {"labels": {"workload.codeflare.dev/userid": "1234"}}}),
    "metadata.labels[workload.codeflare.dev/userid]")]
#[case::managed_by_set("managed-by",
    json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}),
    "spec.managedBy")]
#[tokio::test]
async fn updates_to_sensitive_fields_are_refused(
    #[case] name: &str,
    #[case] patch: Value,
    #[case] field: &str,
) {
    let ns = "webhook-updates";
    let client = admin(ns).await;
    let api: Api<AppWrapper> = Api::namespaced(client, ns);
    let mut aw = updatable();
    aw.metadata.name = Some(name.to_owned());
    let created = api.create(&PostParams::default(), &aw).await.unwrap();
    let status = refusal(
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    );
    assert!(
        status.message.contains(&format!(
            "{field}: Forbidden: attempt to change immutable field"
        )),
        "{status:?}"
    );
    assert_forbidden(&status);
    let now = api.get(name).await.unwrap();
    assert_eq!(now.spec, created.spec);
    assert_eq!(now.metadata.labels, created.metadata.labels);
}

#[tokio::test]
async fn updates_to_other_fields_are_allowed() {
    let ns = "webhook-updates";
    let client = admin(ns).await;
    let api: Api<AppWrapper> = Api::namespaced(client, ns);
    let mut aw = updatable();
    aw.metadata.name = Some("mutable".to_owned());
    api.create(&PostParams::default(), &aw).await.unwrap();
    for patch in [
        json!({"spec": {"suspend": true}}),
        json!({"metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}}}),
        json!({"metadata": {"finalizers": ["workload.codeflare.dev/finalizer"]}}),
        json!({"metadata": {"finalizers": null}}),
        json!({"spec": {"components": [{"template": deployment("d", 2),
            "podSets": [{"path": "template.spec.template", "replicas": 2, "annotations": {"k": "v"}}],
            "annotations": {"c": "d"},
            "podSetInfos": [{"labels": {"l": "v"}, "nodeSelector": {"n": "v"}}]}]}}),
    ] {
        api.patch("mutable", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap_or_else(|e| panic!("{patch}: {e}"));
    }
}
