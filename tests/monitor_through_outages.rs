//! The invariant monitor has no blind spot during an API-server outage when it reads the audit
//! log. A writer of the test's own forges a state that breaks a rule and takes it back while
//! the watch cannot see (its connection held by a proxy the test controls); the API server is
//! then restarted, so the watch must re-list, and the re-list shows only the state taken back.
//! The monitor on the watch misses the forged state; the monitor on the audit log refuses it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use conformance_steps::monitor::{Monitor, Source};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use clusters::providers::local::{ControlPlanePart, LocalCluster, LocalOptions};

/// The rule the forged state breaks, as the monitor words it.
const RULE: &str = "QuotaReserved must be False once Succeeded";
const NS: &str = "outage";
const NAME: &str = "forged";

/// A TCP proxy to the API server whose connections the test can cut and hold.
struct Proxy {
    port: u16,
    held: Arc<Mutex<bool>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    _accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(false));
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let (h, c) = (Arc::clone(&held), Arc::clone(&connections));
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let (held, upstream) = (Arc::clone(&h), upstream.clone());
                c.lock().unwrap().push(tokio::spawn(async move {
                    while *held.lock().unwrap() {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    if let Ok(mut server) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                }));
            }
        });
        Proxy {
            port,
            held,
            connections,
            _accept: accept,
        }
    }

    /// Cuts every connection and holds new ones until [`Proxy::release`].
    fn cut_and_hold(&self) {
        *self.held.lock().unwrap() = true;
        for connection in self.connections.lock().unwrap().drain(..) {
            connection.abort();
        }
    }

    fn release(&self) {
        *self.held.lock().unwrap() = false;
    }
}

async fn client_through(cluster: &LocalCluster, proxy: Option<&Proxy>) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(clusters::Cluster::kubeconfig(cluster)).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    if let Some(proxy) = proxy {
        config.cluster_url = format!("https://127.0.0.1:{}", proxy.port).parse().unwrap();
    }
    config.read_timeout = None;
    kube::Client::try_from(config).unwrap()
}

fn status(phase: &str, quota_reserved: &str, message: &str) -> Value {
    json!({"status": {"phase": phase, "conditions": [{
        "type": "QuotaReserved", "status": quota_reserved, "reason": "Forged",
        "message": message, "lastTransitionTime": "2026-12-03T08:00:00Z"}]}})
}

async fn write_status(api: &Api<DynamicObject>, status: Value) {
    api.patch_status(NAME, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

/// The last QuotaReserved message the monitor observed of the forged AppWrapper.
fn last_message(monitor: &Monitor) -> Option<String> {
    monitor
        .take_history(NS)
        .into_iter()
        .flat_map(|h| h.observations)
        .last()
        .and_then(|o| o.condition("QuotaReserved").map(|c| c.message.clone()))
}

#[tokio::test]
async fn a_state_forged_and_taken_back_during_an_outage_is_refused_from_the_audit_log() {
    let mut cluster = LocalCluster::up(LocalOptions {
        nodes: 0,
        ..LocalOptions::default()
    })
    .await
    .unwrap();
    let log = cluster
        .appwrapper_audit_log()
        .expect("the local cluster logs every AppWrapper write");
    let client = client_through(&cluster, None).await;
    clusters::crds::install(&client, &[appwrapper_controller::crd::appwrapper_crd()])
        .await
        .unwrap();
    let upstream = format!(
        "127.0.0.1:{}",
        server_port(clusters::Cluster::kubeconfig(&cluster))
    );
    let proxy = Proxy::start(upstream).await;
    let watched = Monitor::start(
        client_through(&cluster, Some(&proxy)).await,
        Source::Watch,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let logged = Monitor::start(
        client.clone(),
        Source::AuditLog(log),
        Duration::from_secs(30),
    )
    .await
    .unwrap();

    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("workload.codeflare.dev", "v1beta2", "AppWrapper"),
        "appwrappers",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &resource);
    let appwrapper: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {"managedBy": "example.com/another-controller", "components": [{"template": {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &appwrapper)
        .await
        .unwrap();
    write_status(&api, status("Suspended", "False", "before")).await;
    for monitor in [&watched, &logged] {
        eventually("both monitors to see the first state", || {
            last_message(monitor).is_some()
        })
        .await;
    }

    proxy.cut_and_hold();
    write_status(&api, status("Succeeded", "True", "forged")).await;
    write_status(&api, status("Suspended", "False", "taken back")).await;
    // A watch cache rebuilt from etcd cannot resume the old watch: the watch re-lists.
    cluster
        .restart_part(ControlPlanePart::ApiServer, Duration::from_millis(500))
        .await
        .unwrap();
    proxy.release();
    eventually("the watch to see the state taken back", || {
        last_message(&watched).as_deref() == Some("taken back")
    })
    .await;
    logged.settle(NS, Duration::from_secs(30)).await;

    let seen_by_watch = messages(&watched);
    assert!(
        seen_by_watch.iter().all(|m| !m.contains(RULE)),
        "the watch saw the forged state, so the outage hid nothing: {seen_by_watch:?}"
    );
    let seen_in_log = messages(&logged);
    assert!(
        seen_in_log.iter().any(|m| m.contains(RULE)),
        "the audit log's monitor missed the forged state; it found {seen_in_log:?}"
    );
    assert!(
        logged.unchecked_count() == 0,
        "from the audit log nothing goes unchecked: {:?}",
        logged.unchecked()
    );
}

fn messages(monitor: &Monitor) -> Vec<String> {
    monitor
        .violations_in(NS)
        .into_iter()
        .map(|v| v.message)
        .collect()
}

fn server_port(kubeconfig: &std::path::Path) -> u16 {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server:"))
        .expect("a server in the kubeconfig")
        .trim();
    server.rsplit(':').next().unwrap().parse().unwrap()
}

async fn eventually(what: &str, done: impl Fn() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}
