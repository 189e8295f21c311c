//! Our controller deploys where the reference deploys, on a local cluster with one real
//! kubelet node (root and the node's host packages, as `ci/setup` installs them):
//!
//! 1. `awconf controller manifests` (without its ConfigMap) gives a Ready pod that created its
//!    ConfigMap, filled its certificate Secret and injected the caBundle; an invalid
//!    AppWrapper is denied with 403 and the field path; `/metrics` answers 401 without a token
//!    and 200 with one RBAC allows.
//! 2. The reference operator's own release manifests with only the image replaced by ours
//!    give a working controller: an AppWrapper runs to Succeeded through Kueue.

use std::time::Duration;

use clusters::Cluster as _;
use clusters::install::controller::manifests::{
    self, CONFIG_MAP, MUTATING, NAMESPACE, SECRET, Settings, VALIDATING,
};
use clusters::install::{self, Part, Target};
use clusters::kueue::KueueSource;
use clusters::kueue::objects::{self, ClusterQueueSpec};
use clusters::nodes::NodeShape;
use clusters::{LocalCluster, LocalOptions};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

fn aw_resource() -> ApiResource {
    ApiResource {
        group: "workload.codeflare.dev".into(),
        version: "v1beta2".into(),
        api_version: "workload.codeflare.dev/v1beta2".into(),
        kind: "AppWrapper".into(),
        plural: "appwrappers".into(),
    }
}

async fn eventually<T, F, Fut>(what: &str, seconds: u64, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {seconds} s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn appwrapper(name: &str, ns: &str, queue: Option<&str>, components: Value) -> DynamicObject {
    let mut aw = json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": { "name": name, "namespace": ns, "labels": {} },
        "spec": { "components": components },
    });
    if let Some(queue) = queue {
        aw["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!(queue);
    }
    serde_json::from_value(aw).unwrap()
}

/// A token of a ServiceAccount that may `get /metrics`.
async fn metrics_token(client: &kube::Client) -> String {
    let ns = "default";
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let account =
        serde_json::from_value(json!({ "metadata": { "name": "metrics-reader" } })).unwrap();
    let _ = accounts.create(&PostParams::default(), &account).await;
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": "awconf-metrics-reader" },
        "rules": [{ "nonResourceURLs": ["/metrics"], "verbs": ["get"] }],
    }))
    .unwrap();
    let _ = Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": "awconf-metrics-reader" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "awconf-metrics-reader" },
        "subjects": [{ "kind": "ServiceAccount", "name": "metrics-reader", "namespace": ns }],
    }))
    .unwrap();
    let _ = Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    accounts
        .create_token_request("metrics-reader", &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .and_then(|s| s.token)
        .unwrap()
}

async fn scrape(pod_ip: &str, token: Option<&str>) -> u16 {
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut request = http.get(format!("https://{pod_ip}:8443/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0)
}

async fn controller_pod_ip(client: &kube::Client) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    eventually("a running controller pod with an address", 60, || async {
        let list = pods
            .list(&ListParams::default().labels(manifests::POD_SELECTOR))
            .await
            .ok()?;
        list.items.iter().find_map(|p| {
            let status = p.status.as_ref()?;
            (status.phase.as_deref() == Some("Running") && p.metadata.deletion_timestamp.is_none())
                .then(|| status.pod_ip.clone())
                .flatten()
        })
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn our_controller_deploys_from_its_manifests_and_from_the_reference_s() {
    let cluster = LocalCluster::up(LocalOptions {
        nodes: 0,
        real_nodes: 1,
        ..LocalOptions::default()
    })
    .await
    .expect("a local cluster with a real node (needs root and the node's packages)");
    let client = cluster.client().await.unwrap();
    let loader = clusters::providers::local::image_loader_for(cluster.kubeconfig())
        .expect("the real node's containerd");
    let work = tempfile::tempdir().unwrap();
    let target = Target {
        client: client.clone(),
        loader,
        cache: clusters::toolchain::cache_dir(),
        work_dir: work.path().into(),
    };
    let request = install::Request {
        parts: vec![Part::Kueue, Part::Kwok],
        kueue: KueueSource::pinned(),
        fake_nodes: 1,
        node_shape: NodeShape::gpu(0),
        controller_binary: None,
        controller: Settings::release(""),
    };
    install::install(&target, &request, &|line| println!("{line}"))
        .await
        .unwrap();

    // 1. Our install manifests, as `awconf controller manifests` prints them, minus the
    //    ConfigMap: the controller creates it.
    let binary = std::path::PathBuf::from(env!("CARGO_BIN_EXE_awconf"))
        .with_file_name("appwrapper-controller");
    assert!(
        binary.is_file(),
        "{} (cargo builds it for the controller's tests)",
        binary.display()
    );
    let reference = install::controller::image_reference(&binary).unwrap();
    let image = clusters::images::binary_image_at(&reference, &binary, "/manager").unwrap();
    let image = target.load(image, "appwrapper-controller").await.unwrap();
    let mut settings = Settings::release(&image);
    settings.pull_policy = "Never".into();
    let objects: Vec<Value> = manifests::render(&settings)
        .into_iter()
        .filter(|o| o["kind"] != "ConfigMap")
        .collect();
    install::apply::apply_all(&client, &objects).await.unwrap();
    install::controller::wait_serving(&client, Duration::from_secs(300))
        .await
        .unwrap();

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let created = config_maps
        .get(CONFIG_MAP)
        .await
        .expect("the controller created its ConfigMap");
    assert!(created.data.unwrap_or_default().contains_key("config.yaml"));
    let secret = Api::<Secret>::namespaced(client.clone(), NAMESPACE)
        .get(SECRET)
        .await
        .unwrap();
    let data = secret.data.unwrap_or_default();
    assert!(
        data.get("tls.crt").is_some_and(|c| !c.0.is_empty()),
        "the Secret holds a certificate"
    );
    for (plural, name) in [
        ("mutatingwebhookconfigurations", MUTATING),
        ("validatingwebhookconfigurations", VALIDATING),
    ] {
        let kind = if plural.starts_with("mutating") {
            "MutatingWebhookConfiguration"
        } else {
            "ValidatingWebhookConfiguration"
        };
        let resource = ApiResource {
            group: "admissionregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "admissionregistration.k8s.io/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        let config = Api::<DynamicObject>::all_with(client.clone(), &resource)
            .get(name)
            .await
            .unwrap();
        let bundle = &config.data["webhooks"][0]["clientConfig"]["caBundle"];
        assert!(
            bundle.as_str().is_some_and(|b| !b.is_empty()),
            "{name} has its caBundle"
        );
    }

    let appwrappers: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &aw_resource());
    let nested = appwrapper(
        "nested",
        "default",
        None,
        json!([{ "template": { "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                              "metadata": { "name": "inner" }, "spec": { "components": [] } } }]),
    );
    let denied = eventually("the webhook to deny a nested AppWrapper", 60, || async {
        match appwrappers.create(&PostParams::default(), &nested).await {
            Err(kube::Error::Api(status)) => Some(status),
            Ok(_) => {
                let _ = appwrappers.delete("nested", &Default::default()).await;
                None
            }
            Err(_) => None,
        }
    })
    .await;
    assert_eq!(denied.code, 403, "{denied:?}");
    assert!(
        denied.message.contains("spec.components[0].template"),
        "{}",
        denied.message
    );

    let ip = controller_pod_ip(&client).await;
    let token = metrics_token(&client).await;
    assert_eq!(scrape(&ip, None).await, 401);
    assert_eq!(scrape(&ip, Some(&token)).await, 200);

    // 2. The reference's own release manifests with our image: an AppWrapper runs through Kueue.
    install::reference::install(
        &target,
        clusters::toolchain::APPWRAPPER_DEFAULT,
        Some(&image),
    )
    .await
    .unwrap();
    let ns = "drop-in";
    clusters::testing::namespace(&client, ns).await;
    let mut flavor = objects::resource_flavor("drop-in-flavor");
    flavor["spec"] = json!({
        "nodeLabels": { "type": "kwok" },
        "tolerations": [{ "key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule" }],
    });
    objects::apply(&client, &flavor).await.unwrap();
    let spec = ClusterQueueSpec {
        flavor: "drop-in-flavor".into(),
        ..ClusterQueueSpec::default()
    };
    objects::apply(&client, &objects::cluster_queue("drop-in", &spec))
        .await
        .unwrap();
    objects::apply(&client, &objects::local_queue(ns, "queue", "drop-in"))
        .await
        .unwrap();
    let appwrappers: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &aw_resource());
    let job = appwrapper(
        "runs",
        ns,
        Some("queue"),
        json!([{ "template": {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": { "name": "runs" },
            "spec": { "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "c", "image": "busybox", "resources": { "requests": { "cpu": "100m" } } }],
            } } },
        } }]),
    );
    eventually("the AppWrapper to be accepted", 120, || async {
        appwrappers.create(&PostParams::default(), &job).await.ok()
    })
    .await;
    eventually("the AppWrapper to succeed", 180, || async {
        let aw = appwrappers.get("runs").await.ok()?;
        (aw.data["status"]["phase"] == "Succeeded").then_some(())
    })
    .await;
}
