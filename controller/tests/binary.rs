//! The controller binary as an operator runs it: probes and metrics on every replica, the
//! webhook's certificate readiness, and leader election between two replicas so that only the
//! leader reconciles and a standby takes over when the leader is killed.

mod ops_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use appwrapper_controller::api::{AppWrapper, Phase};
use appwrapper_controller::webhook::VALIDATE_PATH;
use clusters::Cluster;
use clusters::pki::Ca;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use ops_support::*;
use serde_json::json;

/// A replica of the controller binary; killed with SIGKILL when dropped.
struct Replica {
    child: Child,
    name: String,
    log: PathBuf,
    metrics: u16,
    health: u16,
}

impl Replica {
    /// Starts the binary with `config` (YAML) as `HOSTNAME=<name>`, so its Lease identity
    /// starts with `<name>_`.
    fn start(name: &str, config: &str, extra: &[&str]) -> Replica {
        let cluster = clusters::local::shared().unwrap();
        let dir = cluster.work_dir().join("replicas");
        std::fs::create_dir_all(&dir).unwrap();
        let ports = clusters::ports::free_ports(2).unwrap();
        let (metrics, health) = (ports[0], ports[1]);
        let config = config.replace(
            "controllerManager:\n",
            &format!(
                "controllerManager:\n  metrics: {{bindAddress: \"127.0.0.1:{metrics}\"}}\n  health: {{bindAddress: \"127.0.0.1:{health}\"}}\n"
            ),
        );
        let config_path = dir.join(format!("{name}.yaml"));
        std::fs::write(&config_path, config).unwrap();
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_appwrapper-controller"))
            .arg("--config-file")
            .arg(&config_path)
            .arg("--kubeconfig")
            .arg(cluster.kubeconfig())
            .args(extra)
            .env("HOSTNAME", name)
            .env("RUST_LOG", "info")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Replica {
            child,
            name: name.to_owned(),
            log,
            metrics,
            health,
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    async fn get(&self, port: u16, path: &str) -> Option<(u16, String)> {
        let response = reqwest::get(format!("http://127.0.0.1:{port}{path}"))
            .await
            .ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    }

    async fn metrics(&self) -> String {
        self.get(self.metrics, "/metrics")
            .await
            .map(|(_, text)| text)
            .unwrap_or_default()
    }

    /// Sum of `controller_runtime_reconcile_total` over its labels.
    async fn reconciles(&self) -> u64 {
        self.metrics()
            .await
            .lines()
            .filter(|l| l.starts_with("controller_runtime_reconcile_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

fn leader_config(lease_namespace: &str, lease: &str) -> String {
    format!(
        "controllerManager:\n  leaderElection: true\n  leaderElectionNamespace: {lease_namespace}\n  leaderElectionID: {lease}\n  leaseDuration: 4s\n  renewDeadline: 3s\n  retryPeriod: 500ms\nwebhooksEnabled: false\n"
    )
}

async fn setup(ns: &str) -> kube::Client {
    let cluster = clusters::local::shared().unwrap();
    let client = cluster.client().await.unwrap();
    install_appwrapper_crd(&client).await.unwrap();
    namespace(&client, ns).await;
    client
}

async fn holder(leases: &Api<Lease>, name: &str) -> Option<String> {
    leases.get_opt(name).await.ok()??.spec?.holder_identity
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

    let mut first = Replica::start("replica-a", &config, &[]);
    eventually(30, "replica-a to take the Lease", || async {
        holder(&leases, lease)
            .await
            .filter(|h| h.starts_with("replica-a_"))
    })
    .await;
    let second = Replica::start("replica-b", &config, &[]);
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
        holder(&leases, lease)
            .await
            .unwrap_or_default()
            .starts_with("replica-a_"),
        "the Lease moved while replica-a was alive"
    );

    let transitions = |l: Option<Lease>| l.and_then(|l| l.spec?.lease_transitions).unwrap_or(0);
    let before = transitions(leases.get_opt(lease).await.unwrap());
    first.kill();
    let killed = Instant::now();
    eventually(15, "replica-b to take the Lease", || async {
        holder(&leases, lease)
            .await
            .filter(|h| h.starts_with("replica-b_"))
    })
    .await;
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

#[tokio::test]
async fn the_binary_is_not_ready_until_its_webhook_certificate_appears() {
    let ns = "binary-certs";
    let client = setup(ns).await;
    // A Lease held for an hour by someone else: this replica never leads, so it never
    // reconciles anything of the other test.
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "held-elsewhere", "namespace": ns},
        "spec": {"holderIdentity": "elsewhere", "leaseDurationSeconds": 3600,
                 "renewTime": "2030-01-01T00:00:00.000000Z"},
    }))
    .unwrap();
    Api::<Lease>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();

    let cluster = clusters::local::shared().unwrap();
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
    assert_eq!(replica.reconciles().await, 0, "{}", replica.log_tail());
}

fn write_serving_cert(ca: &Ca, dir: &Path) {
    let pair = ca.serving("appwrapper-webhook", &[], &[]).unwrap();
    // The key first: the certificate's appearance is what completes the pair.
    std::fs::write(dir.join("tls.key"), &pair.key_pem).unwrap();
    std::fs::write(dir.join("tls.crt"), &pair.cert_pem).unwrap();
}
