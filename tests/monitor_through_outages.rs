//! The invariant monitor has no blind spot during an API-server outage when it reads the audit
//! log. A writer of the test's own forges a state that breaks a rule and takes it back while
//! the watch cannot see (its connection held by a proxy the test controls); the API server is
//! then restarted, so the watch must re-list, and the re-list shows only the state taken back.
//! The monitor on the watch misses the forged state; the monitor on the audit log refuses it.
//!
//! The same holds for what a release leaves: a pod there when the release was written and
//! removed before any read could find it is refused from the log, and missed by a read.
//!
//! And for a write the API server stored but died before logging: its state is read back from
//! etcd's history, and refused; without etcd it is reported unchecked.

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
    let (mut cluster, log, client) = cluster_with_crd().await;
    let (proxy, watched, logged) = watched_and_logged(&cluster, log, &client).await;

    let api = namespace_and_appwrapper(&client).await;
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

#[tokio::test]
async fn a_state_stored_but_never_logged_is_read_back_from_etcd_and_refused() {
    let (cluster, log, client) = cluster_with_crd().await;
    let api = namespace_and_appwrapper(&client).await;
    write_status(&api, status("Suspended", "False", "before")).await;
    write_status(&api, status("Succeeded", "True", "forged")).await;
    // Suspended to Succeeded is no edge: the log alone sees a gap it cannot explain.
    write_status(&api, status("Succeeded", "False", "taken back")).await;

    // The log as an API server killed between storing the forged state and logging it leaves
    // it: the write received, its completion never written.
    let lost = tempfile::NamedTempFile::new().unwrap();
    let mut kept = String::new();
    let mut dropped = 0;
    eventually("the log to hold the write taken back", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("taken back"))
    })
    .await;
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        let message = &event["responseObject"]["status"]["conditions"][0]["message"];
        if event["stage"] == "ResponseComplete" && message == "forged" {
            dropped += 1;
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    assert_eq!(
        dropped, 1,
        "the forged write's completion is in the log once"
    );
    std::fs::write(lost.path(), kept).unwrap();

    let source = |etcd: Option<String>| Source::AuditLog {
        log: lost.path().to_path_buf(),
        etcd,
    };
    let with_etcd = Monitor::start(
        client.clone(),
        source(Some(cluster.etcd_url())),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let log_alone = Monitor::start(client.clone(), source(None), Duration::from_secs(30))
        .await
        .unwrap();
    for monitor in [&with_etcd, &log_alone] {
        eventually("the monitor to read the state taken back", || {
            last_message(monitor).as_deref() == Some("taken back")
        })
        .await;
        monitor.settle(NS, Duration::from_secs(30)).await;
    }

    let from_etcd = messages(&with_etcd);
    assert!(
        from_etcd.iter().any(|m| m.contains(RULE)),
        "the forged state was not read back from etcd; the monitor found {from_etcd:?}"
    );
    assert_eq!(
        with_etcd.unchecked_count(),
        0,
        "{:?}",
        with_etcd.unchecked()
    );
    let from_log = messages(&log_alone);
    assert!(
        from_log.iter().all(|m| !m.contains(RULE)) && log_alone.unchecked_count() > 0,
        "the log alone cannot show the forged state, and says so: {from_log:?}"
    );
}

fn deployed(phase: &str, deployed: &str) -> Value {
    let condition = |kind: &str| {
        json!({"type": kind, "status": deployed, "reason": "Forged", "message": "",
               "lastTransitionTime": "2026-12-03T08:00:00Z"})
    };
    json!({"status": {"phase": phase, "conditions": [
        condition("QuotaReserved"), condition("ResourcesDeployed")]}})
}

#[tokio::test]
async fn a_pod_there_at_a_release_and_gone_before_any_read_is_refused_from_the_audit_log() {
    const RELEASE: &str = "ResourcesDeployed and QuotaReserved stopped being True";
    let (cluster, log, client) = cluster_with_crd().await;
    let (proxy, watched, logged) = watched_and_logged(&cluster, log, &client).await;

    let api = namespace_and_appwrapper(&client).await;
    write_status(&api, deployed("Running", "True")).await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client.clone(), NS);
    let pod = json!({"metadata": {"name": "left", "labels": {
                        "workload.codeflare.dev/appwrapper": NAME}},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .unwrap();
    for monitor in [&watched, &logged] {
        eventually("both monitors to see the deployment", || {
            monitor
                .take_history(NS)
                .into_iter()
                .flat_map(|h| h.observations)
                .any(|o| o.phase == appwrapper_controller::api::Phase::Running)
        })
        .await;
    }

    proxy.cut_and_hold();
    write_status(&api, deployed("Suspending", "True")).await;
    write_status(&api, deployed("Suspended", "False")).await;
    pods.delete("left", &kube::api::DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    proxy.release();
    watched.settle(NS, Duration::from_secs(30)).await;
    logged.settle(NS, Duration::from_secs(30)).await;

    let read = messages(&watched);
    assert!(
        read.iter().all(|m| !m.contains(RELEASE)),
        "a read found the pod, so nothing was hidden from it: {read:?}"
    );
    let from_log = messages(&logged);
    assert!(
        from_log
            .iter()
            .any(|m| m.contains(RELEASE) && m.contains("Pod left") && m.contains("existed")),
        "the audit log's monitor missed the pod; it found {from_log:?}"
    );
    assert_eq!(logged.unchecked_count(), 0, "{:?}", logged.unchecked());
}

/// A local cluster with no node and the AppWrapper CRD, its audit log, and a client.
/// A monitor that watches through a proxy the test controls, and one that reads the audit log
/// (and etcd) directly; the proxy lives as long as the watch needs it.
async fn watched_and_logged(
    cluster: &LocalCluster,
    log: std::path::PathBuf,
    client: &kube::Client,
) -> (Proxy, Monitor, Monitor) {
    let upstream = format!(
        "127.0.0.1:{}",
        server_port(clusters::Cluster::kubeconfig(cluster))
    );
    let proxy = Proxy::start(upstream).await;
    let watched = Monitor::start(
        client_through(cluster, Some(&proxy)).await,
        Source::Watch,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let logged = Monitor::start(
        client.clone(),
        Source::AuditLog {
            log,
            etcd: Some(cluster.etcd_url()),
        },
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    (proxy, watched, logged)
}

async fn cluster_with_crd() -> (LocalCluster, std::path::PathBuf, kube::Client) {
    let cluster = LocalCluster::up(LocalOptions {
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
    (cluster, log, client)
}

/// Creates the test's namespace and its AppWrapper; the AppWrappers of that namespace.
async fn namespace_and_appwrapper(client: &kube::Client) -> Api<DynamicObject> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();
    let api = appwrappers(client);
    api.create(&PostParams::default(), &appwrapper())
        .await
        .unwrap();
    api
}

fn appwrappers(client: &kube::Client) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("workload.codeflare.dev", "v1beta2", "AppWrapper"),
        "appwrappers",
    );
    Api::namespaced_with(client.clone(), NS, &resource)
}

fn appwrapper() -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {"managedBy": "example.com/another-controller", "components": [{"template": {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]},
    }))
    .unwrap()
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
