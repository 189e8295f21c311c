//! The controller binary run as an operator runs it, against the shared embedded cluster, and
//! what a test needs around it: a token allowed (or not) to read its metrics, and a Lease held
//! elsewhere so that it never leads.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command};

use clusters::Cluster;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use serde_json::json;

/// A replica of the controller binary; killed with SIGKILL when dropped.
pub struct Replica {
    child: Child,
    pub name: String,
    log: PathBuf,
    pub metrics: u16,
    pub health: u16,
    /// Bearer token for `/metrics`.
    pub token: String,
}

impl Replica {
    /// Starts the binary with `config` (YAML) as `HOSTNAME=<name>`, so its Lease identity
    /// starts with `<name>_`.
    pub fn start(name: &str, config: &str, extra: &[&str]) -> Replica {
        Replica::start_with_env(name, config, extra, &[])
    }

    pub fn start_with_env(
        name: &str,
        config: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Replica {
        let cluster = clusters::providers::local::shared().unwrap();
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
            .envs(env.iter().copied())
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
            token: String::new(),
        }
    }

    /// The whole log: an error is followed by its backtrace when `RUST_BACKTRACE` is set.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails if the log holds any of `secrets` (tokens, PEM keys: each PEM is checked by every
    /// line of its body, so that a key logged in pieces or re-wrapped is still found) or the
    /// header of a PEM private key.
    pub fn assert_log_keeps(&self, secrets: &[&str]) {
        let log = self.log();
        assert!(!log.is_empty(), "{} wrote no log", self.name);
        assert!(
            !log.contains("PRIVATE KEY"),
            "{}'s log holds a private key",
            self.name
        );
        for secret in secrets {
            let pieces: Vec<&str> = if secret.contains("-----BEGIN") {
                secret
                    .lines()
                    .filter(|l| !l.starts_with("-----") && l.len() >= 16)
                    .collect()
            } else {
                vec![secret]
            };
            assert!(!pieces.is_empty(), "nothing to look for in {secret:?}");
            for piece in pieces {
                assert!(
                    !log.contains(piece),
                    "{}'s log holds a secret ({}...)",
                    self.name,
                    &piece[..piece.len().min(8)]
                );
            }
        }
    }

    pub fn log_tail(&self) -> String {
        let text = self.log();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// A plain-HTTP GET on a local port (the health probes).
    pub async fn get(&self, port: u16, path: &str) -> Option<(u16, String)> {
        let response = reqwest::get(format!("http://127.0.0.1:{port}{path}"))
            .await
            .ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    }

    /// `GET /metrics` over HTTPS (the certificate is self-signed) with `token`, if any.
    pub async fn scrape(&self, token: Option<&str>) -> Option<(u16, String)> {
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .ok()?;
        let mut request = client.get(format!("https://127.0.0.1:{}/metrics", self.metrics));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.ok()?;
        let status = response.status().as_u16();
        Some((status, response.text().await.ok()?))
    }

    /// The metrics, read with [`Replica::token`].
    pub async fn metrics(&self) -> String {
        self.scrape(Some(&self.token))
            .await
            .map(|(_, text)| text)
            .unwrap_or_default()
    }

    /// Sum of `controller_runtime_reconcile_total` over its labels.
    pub async fn reconciles(&self) -> u64 {
        self.metrics()
            .await
            .lines()
            .filter(|l| l.starts_with("controller_runtime_reconcile_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to the process, as `kill -<signal>` does.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {}: {status}", self.name);
    }

    /// How the process ended, once it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A token of ServiceAccount `ns/name`, which may `get /metrics` when `allowed`.
pub async fn metrics_token(client: &kube::Client, ns: &str, name: &str, allowed: bool) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}})).unwrap();
    ignore_exists(accounts.create(&PostParams::default(), &account).await);
    if allowed {
        let role: ClusterRole = serde_json::from_value(json!({
            "metadata": {"name": "awconf-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }))
        .unwrap();
        ignore_exists(
            Api::<ClusterRole>::all(client.clone())
                .create(&PostParams::default(), &role)
                .await,
        );
        let binding: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": format!("awconf-metrics-reader-{ns}-{name}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "awconf-metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        }))
        .unwrap();
        ignore_exists(
            Api::<ClusterRoleBinding>::all(client.clone())
                .create(&PostParams::default(), &binding)
                .await,
        );
    }
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .and_then(|s| s.token)
        .unwrap()
}

/// A Lease `ns/name` held for an hour by someone else: a replica electing with it never leads,
/// so it never reconciles anything of another test.
pub async fn held_lease(client: &kube::Client, ns: &str, name: &str) {
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"holderIdentity": "elsewhere", "leaseDurationSeconds": 3600,
                 "renewTime": "2030-01-01T00:00:00.000000Z"},
    }))
    .unwrap();
    ignore_exists(
        Api::<Lease>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &lease)
            .await,
    );
}

fn ignore_exists<T>(result: Result<T, kube::Error>) {
    match result {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => panic!("{e}"),
    }
}
