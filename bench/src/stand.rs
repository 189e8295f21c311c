//! What one run stands on: a fresh local cluster of its own (its fake nodes, the API server's
//! audit log), the Kueue manager, and the controller under test with its webhooks, brought
//! up by the conformance harness's [`Environment`]. Plain Jobs need no controller.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clusters::kueue::{Kueue, KueueSource};
use clusters::providers::local::audit::Detail as AuditDetail;
use clusters::{Cluster as _, LocalCluster, LocalOptions};
use environment::Environment;
use environment::{ControllerMode, SuiteOptions};

/// What runs the workloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// AppWrappers, run by this controller.
    Controller(ControllerMode),
    /// The same pods as plain batch Jobs, queued to Kueue.
    PlainJobs,
}

impl Subject {
    pub fn label(&self) -> String {
        match self {
            Subject::Controller(ControllerMode::Reference { version }) => {
                format!("reference {version}")
            }
            Subject::Controller(mode) => format!("ours ({})", mode.name()),
            Subject::PlainJobs => "plain Jobs".into(),
        }
    }

    /// The product name the controller's requests carry in their User-Agent, when known.
    pub fn user_agent_product(&self) -> Option<&'static str> {
        match self {
            Subject::Controller(ControllerMode::Process { .. }) => Some("appwrapper-controller"),
            Subject::Controller(ControllerMode::Reference { .. }) => Some("appwrapper-operator"),
            Subject::Controller(ControllerMode::Embedded) => Some(crate::audit::NO_USER_AGENT),
            _ => None,
        }
    }
}

pub struct Stand {
    pub cluster: LocalCluster,
    pub kueue: Kueue,
    /// The controller under test and its clients; `None` for plain Jobs.
    pub environment: Option<Environment>,
    pub kubeconfig: PathBuf,
}

impl Stand {
    pub async fn up(
        subject: &Subject,
        nodes: usize,
        kueue: &KueueSource,
        report_dir: &Path,
        audit: AuditDetail,
    ) -> anyhow::Result<Stand> {
        std::fs::create_dir_all(report_dir)
            .with_context(|| format!("creating {}", report_dir.display()))?;
        if let Subject::Controller(ControllerMode::Reference { .. }) = subject {
            reference_port_free()?;
        }
        let cluster = LocalCluster::up(LocalOptions {
            nodes,
            audit: Some(audit),
            ..LocalOptions::default()
        })
        .await
        .context("bringing up the local cluster")?;
        let kueue = Kueue::start(clusters::shared_kueue::host(&cluster), kueue)
            .await
            .context("starting Kueue")?;
        let environment = match subject {
            Subject::Controller(mode) => {
                let options = SuiteOptions {
                    controller: mode.clone(),
                    kueue: kueue.source().clone(),
                    report_dir: report_dir.to_path_buf(),
                    ..SuiteOptions::default()
                };
                Some(Environment::on_local_cluster(&options, &cluster, kueue.log_path()).await?)
            }
            Subject::PlainJobs => {
                let client = cluster.client().await?;
                environment::apply_flavor(&client).await?;
                None
            }
        };
        Ok(Stand {
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            cluster,
            kueue,
            environment,
        })
    }

    /// The controller first, then Kueue, then the cluster.
    pub async fn down(self) {
        let Stand {
            cluster,
            kueue,
            environment,
            ..
        } = self;
        if let Some(environment) = environment {
            let controller = tokio::sync::Mutex::new(environment.controller);
            Environment::down(&controller, environment.restore, &environment.client).await;
            drop(environment.keep);
        }
        let stopping = tokio::task::spawn_blocking(move || {
            drop(kueue);
            drop(cluster);
        });
        if let Err(e) = stopping.await {
            tracing::warn!("stopping the cluster: {e}");
        }
    }
}

/// The reference operator listens on port 9443 of every interface (it cannot be told
/// otherwise): another process there would answer its webhooks.
fn reference_port_free() -> anyhow::Result<()> {
    let port = environment::reference::WEBHOOK_PORT;
    std::net::TcpListener::bind(("0.0.0.0", port))
        .map(drop)
        .with_context(|| {
            format!(
                "port {port} is in use (`ss -ltnp | grep {port}` shows by whom); the reference \
                 operator needs it: run one reference bench or suite at a time"
            )
        })
}

/// A client of the bench's own, named in its requests so that the audit log tells them from
/// the controller's. `timeouts` for single requests; watches need none.
pub async fn bench_client(kubeconfig: &Path, timeouts: bool) -> anyhow::Result<kube::Client> {
    let file = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
            .await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(BENCH_USER_AGENT),
    ));
    if timeouts {
        config.connect_timeout = Some(Duration::from_secs(10));
        config.read_timeout = Some(Duration::from_secs(30));
        config.write_timeout = Some(Duration::from_secs(30));
    } else {
        config.read_timeout = None;
    }
    Ok(kube::Client::try_from(config)?)
}

pub const BENCH_USER_AGENT: &str = "awconf-bench";
