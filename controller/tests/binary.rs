//! The controller binary as an operator runs it: probes and metrics (HTTPS, for authorized
//! readers only) on every replica, the webhook's certificate readiness with a certificate given
//! in files and with the certificate it manages in its Secret, and leader election between
//! two replicas so that only the leader reconciles and a standby takes over when the leader is
//! killed.

mod ops_support;
mod replica;

use std::path::Path;
use std::time::{Duration, Instant};

use appwrapper_controller::api::{AppWrapper, Phase};
use appwrapper_controller::webhook::VALIDATE_PATH;
use clusters::Cluster;
use clusters::pki::Ca;
use std::time::SystemTime;

use appwrapper_controller::certs::{Issued, SecretData, new_serving, valid_serving};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, PostParams};
use ops_support::*;
use replica::{Replica, held_lease, metrics_token};
use rustls::pki_types::pem::PemObject;
use serde_json::json;

fn leader_config(lease_namespace: &str, lease: &str) -> String {
    format!(
        "controllerManager:\n  leaderElection: true\n  leaderElectionNamespace: {lease_namespace}\n  leaderElectionID: {lease}\n  leaseDuration: 4s\n  renewDeadline: 3s\n  retryPeriod: 500ms\nwebhooksEnabled: false\n"
    )
}

async fn setup(ns: &str) -> kube::Client {
    let cluster = clusters::providers::local::shared().unwrap();
    let client = cluster.client().await.unwrap();
    install_appwrapper_crd(&client).await.unwrap();
    namespace(&client, ns).await;
    client
}

async fn holder(leases: &Api<Lease>, name: &str) -> Option<String> {
    leases.get_opt(name).await.ok()??.spec?.holder_identity
}

/// Whether `replica` (its `HOSTNAME`) holds the Lease.
async fn held_by(leases: &Api<Lease>, lease: &str, replica: &str) -> bool {
    holder(leases, lease)
        .await
        .is_some_and(|h| h.starts_with(&format!("{replica}_")))
}

async fn wait_held_by(leases: &Api<Lease>, lease: &str, replica: &str, secs: u64) {
    eventually(secs, &format!("{replica} to take the Lease"), || async {
        held_by(leases, lease, replica).await.then_some(())
    })
    .await;
}

fn running_pod_appwrapper(name: &str) -> AppWrapper {
    let mut aw = appwrapper(name, vec![(pod(&format!("{name}-pod")), json!([]))]);
    aw.spec.suspend = false;
    aw
}

async fn wait_running(aws: &Api<AppWrapper>, name: &str, secs: u64, who: &Replica) {
    let what = format!(
        "{name} Running (reconciled by {}); log:\n{}",
        who.name,
        who.log_tail()
    );
    eventually(secs, &what, || async {
        let aw = aws.get(name).await.ok()?;
        (aw.status?.phase == Phase::Running).then_some(())
    })
    .await;
}

#[tokio::test]
async fn only_the_leader_reconciles_and_a_standby_takes_over_when_it_is_killed() {
    let ns = "leader-election";
    let client = setup(ns).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let lease = "f134c674.codeflare.dev";
    let config = leader_config(ns, lease);

    let token = metrics_token(&client, ns, "metrics-reader", true).await;
    let mut first = Replica::start("replica-a", &config, &[]);
    first.token = token.clone();
    wait_held_by(&leases, lease, "replica-a", 30).await;
    let mut second = Replica::start("replica-b", &config, &[]);
    second.token = token;
    for replica in [&first, &second] {
        eventually(30, "both replicas to answer their probes", || async {
            let healthz = replica.get(replica.health, "/healthz").await?;
            let readyz = replica.get(replica.health, "/readyz").await?;
            (healthz.0 == 200 && readyz.0 == 200).then_some(())
        })
        .await;
    }

    aws.create(&PostParams::default(), &running_pod_appwrapper("first"))
        .await
        .unwrap();
    wait_running(&aws, "first", 60, &first).await;
    assert!(first.reconciles().await > 0, "{}", first.metrics().await);
    let standby = second.metrics().await;
    assert!(
        standby.ends_with("# EOF\n"),
        "the standby serves metrics: {standby}"
    );
    assert_eq!(
        second.reconciles().await,
        0,
        "the standby reconciled:\n{standby}"
    );
    assert!(
        held_by(&leases, lease, "replica-a").await,
        "the Lease moved while replica-a was alive"
    );

    let transitions = |l: Option<Lease>| l.and_then(|l| l.spec?.lease_transitions).unwrap_or(0);
    let before = transitions(leases.get_opt(lease).await.unwrap());
    first.kill();
    let killed = Instant::now();
    wait_held_by(&leases, lease, "replica-b", 15).await;
    let took = killed.elapsed();
    // The record stops changing at the kill; the standby waits one lease duration (4 s) of
    // an unchanged record, then acquires on its next retry (500 ms).
    assert!(
        took <= Duration::from_millis(4000 + 500 + 1500),
        "took over after {took:?}"
    );
    assert_eq!(
        transitions(leases.get_opt(lease).await.unwrap()),
        before + 1
    );

    aws.create(&PostParams::default(), &running_pod_appwrapper("second"))
        .await
        .unwrap();
    wait_running(&aws, "second", 60, &second).await;
    assert!(second.reconciles().await > 0, "{}", second.metrics().await);
}

/// A leader paused (SIGSTOP) past its lease does not lead when it runs again: the standby has
/// taken the Lease and runs what is created meanwhile, and the woken one stops, saying why.
/// That its writes are refused from the renew deadline on is `leader::fence`'s unit tests.
#[tokio::test]
async fn a_leader_paused_past_its_lease_stops_when_it_wakes_and_the_standby_leads() {
    let ns = "leader-paused";
    let client = setup(ns).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
    let aws: Api<AppWrapper> = Api::namespaced(client.clone(), ns);
    let lease = "paused.codeflare.dev";
    let config = leader_config(ns, lease);
    let token = metrics_token(&client, ns, "metrics-reader", true).await;

    let mut first = Replica::start("replica-c", &config, &[]);
    first.token = token.clone();
    wait_held_by(&leases, lease, "replica-c", 30).await;
    let mut second = Replica::start("replica-d", &config, &[]);
    second.token = token;
    aws.create(&PostParams::default(), &running_pod_appwrapper("before"))
        .await
        .unwrap();
    wait_running(&aws, "before", 60, &first).await;

    first.signal("STOP");
    wait_held_by(&leases, lease, "replica-d", 15).await;
    aws.create(&PostParams::default(), &running_pod_appwrapper("during"))
        .await
        .unwrap();
    wait_running(&aws, "during", 60, &second).await;

    first.signal("CONT");
    let woke = Instant::now();
    let status = loop {
        if let Some(status) = first.exited() {
            break status;
        }
        assert!(
            woke.elapsed() < Duration::from_secs(15),
            "replica-c still runs 15 s after waking; its log:\n{}",
            first.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!status.success(), "replica-c exited with {status}");
    assert!(
        first.log().contains("leader election lost"),
        "replica-c exited without saying it lost the Lease; its log:\n{}",
        first.log_tail()
    );
    assert!(
        held_by(&leases, lease, "replica-d").await,
        "the woken replica took the Lease back"
    );
    assert!(second.reconciles().await > 0, "{}", second.metrics().await);
}

#[tokio::test]
async fn the_binary_is_not_ready_until_its_webhook_certificate_appears() {
    let ns = "binary-certs";
    let client = setup(ns).await;
    // A replica that never leads, so it never reconciles anything of another test.
    held_lease(&client, ns, "held-elsewhere").await;

    let cluster = clusters::providers::local::shared().unwrap();
    let cert_dir = cluster.work_dir().join("binary-certs");
    std::fs::create_dir_all(&cert_dir).unwrap();
    let webhook_port = clusters::ports::free_ports(1).unwrap()[0];
    let config = leader_config(ns, "held-elsewhere")
        .replace("webhooksEnabled: false", "webhooksEnabled: true");
    let replica = Replica::start(
        "replica-certs",
        &config,
        &[
            "--webhook-cert-dir",
            &cert_dir.display().to_string(),
            "--webhook-bind-address",
            &format!("127.0.0.1:{webhook_port}"),
        ],
    );

    let not_ready = eventually(30, "the health endpoint", || async {
        replica.get(replica.health, "/readyz").await
    })
    .await;
    assert_eq!(not_ready.0, 500, "{not_ready:?}");
    assert!(
        not_ready.1.contains("certificates are not ready"),
        "{not_ready:?}"
    );
    let healthz = replica.get(replica.health, "/healthz").await.unwrap();
    assert_eq!(healthz.0, 200);

    let ca = Ca::load(&cluster.work_dir().join("pki"), "ca").unwrap();
    write_serving_cert(&ca, &cert_dir);
    eventually(30, "readiness once the certificate is there", || async {
        let (status, _) = replica.get(replica.health, "/readyz").await?;
        (status == 200).then_some(())
    })
    .await;

    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.pair.cert_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "0b3c", "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
            "resource": {"group": "workload.codeflare.dev", "version": "v1beta2", "resource": "appwrappers"},
            "name": "aw", "namespace": ns, "operation": "CREATE", "userInfo": {"username": "someone"},
            "object": {"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
                       "metadata": {"name": "aw", "namespace": ns}, "spec": {"components": []}},
        },
    });
    let answer: serde_json::Value = https
        .post(format!("https://127.0.0.1:{webhook_port}{VALIDATE_PATH}"))
        .json(&review)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["response"]["uid"], "0b3c", "{answer}");
    assert_eq!(answer["response"]["allowed"], false, "{answer}");
    assert_eq!(
        answer["response"]["status"],
        json!({"code": 403, "reason": "Forbidden",
               "message": "spec.components: Invalid value: components contains no podspecs"}),
        "{answer}"
    );
    let mut replica = replica;
    replica.token = metrics_token(&client, ns, "metrics-reader", true).await;
    assert_eq!(replica.reconciles().await, 0, "{}", replica.log_tail());
}

fn write_serving_cert(ca: &Ca, dir: &Path) {
    let pair = ca.serving("appwrapper-webhook", &[], &[]).unwrap();
    // The key first: the certificate's appearance is what completes the pair.
    std::fs::write(dir.join("tls.key"), &pair.key_pem).unwrap();
    std::fs::write(dir.join("tls.crt"), &pair.cert_pem).unwrap();
}

#[tokio::test]
async fn metrics_answer_only_a_token_the_api_server_authenticates_and_rbac_allows() {
    let ns = "binary-metrics";
    let client = setup(ns).await;
    held_lease(&client, ns, "held-elsewhere").await;
    let reader = metrics_token(&client, ns, "reader", true).await;
    let stranger = metrics_token(&client, ns, "stranger", false).await;
    // At debug, so that a token logged anywhere below info is found too.
    let replica = Replica::start_with_env(
        "replica-metrics",
        &leader_config(ns, "held-elsewhere"),
        &[],
        &[("RUST_LOG", "debug")],
    );

    let (status, body) = eventually(30, "the metrics endpoint", || async {
        replica.scrape(Some(&reader)).await
    })
    .await;
    assert_eq!(status, 200, "{body}\n{}", replica.log_tail());
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert_eq!(
        replica.scrape(None).await,
        Some((401, "Unauthorized\n".to_owned()))
    );
    assert_eq!(
        replica.scrape(Some("not-a-token")).await,
        Some((401, "Unauthorized\n".to_owned()))
    );
    assert_eq!(
        replica.scrape(Some(&stranger)).await,
        Some((
            403,
            format!("Authorization denied for user system:serviceaccount:{ns}:stranger\n")
        ))
    );
    let plain = reqwest::get(format!("http://127.0.0.1:{}/metrics", replica.metrics)).await;
    assert!(
        plain.map_or(true, |r| !r.status().is_success()),
        "metrics are not served over plain HTTP"
    );
    replica.assert_log_keeps(&[&reader, &stranger]);
}

const SECRET: &str = "appwrapper-webhook-server-cert";

/// The `webhooks` of a configuration of `hooks` webhooks that match nothing (an unserved
/// resource), so that it bothers no other test; without a caBundle.
fn inert_webhooks(hooks: usize) -> serde_json::Value {
    let webhooks: Vec<serde_json::Value> = (0..hooks)
        .map(|n| {
            json!({
                "name": format!("inert-{n}.awconf.dev"),
                "clientConfig": {"url": "https://127.0.0.1:9/inert"},
                "rules": [{"apiGroups": ["awconf.invalid"], "apiVersions": ["v1"],
                           "operations": ["CREATE"], "resources": ["nothings"]}],
                "failurePolicy": "Ignore",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            })
        })
        .collect();
    json!({ "webhooks": webhooks })
}

fn webhook_resources() -> [ApiResource; 2] {
    [
        ApiResource::erase::<MutatingWebhookConfiguration>(&()),
        ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
    ]
}

fn webhook_apis(client: &kube::Client) -> [Api<DynamicObject>; 2] {
    webhook_resources().map(|resource| Api::all_with(client.clone(), &resource))
}

/// The caBundles of every webhook of both configurations, decoded.
async fn ca_bundles(client: &kube::Client, names: &[String; 2]) -> Vec<Option<Vec<u8>>> {
    let mut bundles = Vec::new();
    for (api, name) in webhook_apis(client).iter().zip(names) {
        let Ok(config) = api.get(name).await else {
            return vec![None];
        };
        for hook in config.data["webhooks"].as_array().into_iter().flatten() {
            let bundle = hook["clientConfig"]["caBundle"].clone();
            bundles.push(
                serde_json::from_value::<k8s_openapi::ByteString>(bundle)
                    .ok()
                    .map(|b| b.0),
            );
        }
    }
    bundles
}

/// What the kubelet does with the Secret's volume, later.
fn mount(dir: &Path, data: &SecretData) {
    std::fs::write(dir.join("tls.key"), &data.tls_key).unwrap();
    std::fs::write(dir.join("tls.crt"), &data.tls_crt).unwrap();
}

async fn secret_data(secrets: &Api<Secret>) -> Option<SecretData> {
    let secret = secrets.get(SECRET).await.ok()?;
    Some(SecretData::from_secret(secret.data.as_ref()))
}

/// The certificate the webhook server presents to a client that calls it by the service's
/// name and trusts only `ca`; `None` when the handshake fails.
async fn served_certificate(port: u16, dns: &str, ca: &[u8]) -> Option<Vec<u8>> {
    let https = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca).ok()?)
        .resolve(dns, ([127, 0, 0, 1], port).into())
        .tls_info(true)
        .build()
        .ok()?;
    let response = https
        .post(format!("https://{dns}:{port}{VALIDATE_PATH}"))
        .json(&json!({}))
        .send()
        .await
        .ok()?;
    let info = response.extensions().get::<reqwest::tls::TlsInfo>()?;
    info.peer_certificate().map(<[u8]>::to_vec)
}

fn der(pem: &[u8]) -> Vec<u8> {
    rustls::pki_types::CertificateDer::from_pem_slice(pem)
        .unwrap()
        .to_vec()
}

#[tokio::test]
async fn the_binary_keeps_its_certificate_in_its_secret_and_its_ca_in_its_webhooks() {
    let ns = "binary-managed-certs";
    let client = setup(ns).await;
    held_lease(&client, ns, "held-elsewhere").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    let _ = secrets.delete(SECRET, &DeleteParams::default()).await;
    let empty: Secret =
        serde_json::from_value(json!({"metadata": {"name": SECRET, "namespace": ns}})).unwrap();
    secrets
        .create(&PostParams::default(), &empty)
        .await
        .unwrap();
    let names = [format!("{ns}-mutating"), format!("{ns}-validating")];
    for ((resource, name), hooks) in webhook_resources().iter().zip(&names).zip([1, 2]) {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
        let _ = api.delete(name, &DeleteParams::default()).await;
        let config = DynamicObject::new(name, resource).data(inert_webhooks(hooks));
        api.create(&PostParams::default(), &config).await.unwrap();
    }

    let cluster = clusters::providers::local::shared().unwrap();
    let cert_dir = cluster.work_dir().join(ns);
    let _ = std::fs::remove_dir_all(&cert_dir);
    std::fs::create_dir_all(&cert_dir).unwrap();
    let port = clusters::ports::free_ports(1).unwrap()[0];
    let config = format!(
        "{}certManagement:\n  namespace: {ns}\n  certificateDir: {}\n  mutatingWebhookConfigName: {}\n  validatingWebhookConfigName: {}\n",
        leader_config(ns, "held-elsewhere")
            .replace("webhooksEnabled: false", "webhooksEnabled: true"),
        cert_dir.display(),
        names[0],
        names[1],
    );
    let replica = Replica::start_with_env(
        "replica-managed-certs",
        &config,
        &[
            "--webhook-cert-dir",
            &cert_dir.display().to_string(),
            "--webhook-bind-address",
            &format!("127.0.0.1:{port}"),
        ],
        &[("RUST_LOG", "debug")],
    );
    let dns = format!("appwrapper-webhook-service.{ns}.svc");

    let first = eventually(60, "the certificate in the Secret", || async {
        secret_data(&secrets)
            .await
            .filter(|d| !d.tls_crt.is_empty() && !d.ca_key.is_empty())
    })
    .await;
    valid_serving(
        &first.ca_crt,
        &first.tls_crt,
        &first.tls_key,
        &dns,
        SystemTime::now(),
    )
    .unwrap();
    eventually(
        30,
        "the CA in every webhook of both configurations",
        || async {
            let bundles = ca_bundles(&client, &names).await;
            (bundles.len() == 3
                && bundles
                    .iter()
                    .all(|b| b.as_deref() == Some(&first.ca_crt[..])))
            .then_some(())
        },
    )
    .await;
    let (status, why) = replica.get(replica.health, "/readyz").await.unwrap();
    assert_eq!(
        status, 500,
        "not ready before the kubelet mounts the Secret"
    );
    assert!(why.contains("certificates are not ready"), "{why}");

    mount(&cert_dir, &first);
    eventually(30, "readiness once the Secret is mounted", || async {
        let (status, _) = replica.get(replica.health, "/readyz").await?;
        (status == 200).then_some(())
    })
    .await;
    let served = eventually(
        30,
        "the webhook server to present the certificate",
        || async { served_certificate(port, &dns, &first.ca_crt).await },
    )
    .await;
    assert_eq!(served, der(&first.tls_crt));

    // Someone re-applies a configuration without its caBundle: the CA goes back in.
    let api = &webhook_apis(&client)[0];
    let mut reset = api.get(&names[0]).await.unwrap();
    reset.data["webhooks"][0]["clientConfig"]
        .as_object_mut()
        .unwrap()
        .remove("caBundle");
    api.replace(&names[0], &PostParams::default(), &reset)
        .await
        .unwrap();
    eventually(30, "the CA injected again", || async {
        let bundles = ca_bundles(&client, &names).await;
        bundles
            .iter()
            .all(|b| b.as_deref() == Some(&first.ca_crt[..]))
            .then_some(())
    })
    .await;

    // A serving certificate due to expire within the lookahead is renewed with the same CA;
    // the server presents the new one once the kubelet has synced it.
    let ca = Issued {
        cert_pem: String::from_utf8(first.ca_crt.clone()).unwrap(),
        key_pem: String::from_utf8(first.ca_key.clone()).unwrap(),
    };
    let now = SystemTime::now();
    let expiring = new_serving(
        &ca,
        std::slice::from_ref(&dns),
        now,
        now + Duration::from_secs(10 * 86_400),
    )
    .unwrap();
    let mut secret = secrets.get(SECRET).await.unwrap();
    let data = secret.data.get_or_insert_with(Default::default);
    data.insert(
        "tls.crt".into(),
        k8s_openapi::ByteString(expiring.cert_pem.clone().into_bytes()),
    );
    data.insert(
        "tls.key".into(),
        k8s_openapi::ByteString(expiring.key_pem.clone().into_bytes()),
    );
    secrets
        .replace(SECRET, &PostParams::default(), &secret)
        .await
        .unwrap();
    let renewed = eventually(60, "a renewed serving certificate", || async {
        secret_data(&secrets)
            .await
            .filter(|d| d.tls_crt != first.tls_crt && d.tls_crt != expiring.cert_pem.as_bytes())
    })
    .await;
    assert_eq!(
        (&renewed.ca_crt, &renewed.ca_key),
        (&first.ca_crt, &first.ca_key)
    );
    valid_serving(
        &renewed.ca_crt,
        &renewed.tls_crt,
        &renewed.tls_key,
        &dns,
        now + Duration::from_secs(300 * 86_400),
    )
    .unwrap();
    mount(&cert_dir, &renewed);
    eventually(30, "the renewed certificate served", || async {
        let served = served_certificate(port, &dns, &renewed.ca_crt).await?;
        (served == der(&renewed.tls_crt)).then_some(())
    })
    .await;
    assert_eq!(replica.get(replica.health, "/readyz").await.unwrap().0, 200);
    let keys = [&first.ca_key, &first.tls_key, &renewed.tls_key]
        .map(|k| String::from_utf8(k.clone()).unwrap());
    replica.assert_log_keeps(&keys.each_ref().map(String::as_str));
    drop(replica);
}
