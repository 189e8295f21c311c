//! Starting the controller under test, one function per mode that runs it here: in this
//! process, our binary as a child, the reference operator as a child, or a user's command.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use appwrapper_controller::metrics::Metrics;
use clusters::process::Process;
use tracing::Instrument as _;

use super::settings::operator_config_path;
use super::{ControllerUnderTest, Running};
use crate::options::ExternalCommand;
use crate::options::mode::{WEBHOOK_CERT_DIR, WEBHOOK_PORT};
use crate::webhook::WebhookEndpoint;

/// Our controller on `client`'s runtime, reconciling what its selector gives it.
pub(super) async fn embedded(
    c: &ControllerUnderTest,
    client: &kube::Client,
) -> anyhow::Result<Running> {
    // Several embedded controllers share this process's log (one per cluster of a scenario's
    // own, and each restart is another): each logs in a span of its own number.
    static INSTANCES: AtomicU64 = AtomicU64::new(0);
    let instance = INSTANCES.fetch_add(1, Ordering::Relaxed) + 1;
    let handle = appwrapper_controller::control_loop::run_selected(
        c.config.clone(),
        client.clone(),
        Arc::new(Metrics::default()),
        c.selector.clone(),
    )
    .instrument(tracing::info_span!("controller", instance))
    .await
    .context("starting the embedded controller")?;
    Ok(Running::Embedded(handle))
}

/// Our binary (`binary`, else the one beside this executable) with the suite's config file.
pub(super) fn process(c: &ControllerUnderTest, binary: Option<&Path>) -> anyhow::Result<Running> {
    let binary = match binary {
        Some(b) => b.to_path_buf(),
        None => find_binary()?,
    };
    let mut args = vec![
        "--kubeconfig".to_string(),
        c.kubeconfig.display().to_string(),
        "--config-file".to_string(),
        c.config_path.display().to_string(),
    ];
    if let Some(selector) = &c.selector {
        args.extend(["--appwrapper-selector".to_string(), selector.clone()]);
    }
    if let Some(webhook) = &c.webhook {
        args.extend([
            "--webhook-cert-dir".to_string(),
            webhook.cert_dir.display().to_string(),
            "--webhook-bind-address".to_string(),
            webhook.bind_address(),
        ]);
    }
    let envs: Vec<(&str, String)> = c
        .identity
        .iter()
        .map(|name| ("HOSTNAME", name.clone()))
        .collect();
    let process = Process::start(
        "appwrapper-controller",
        &binary,
        &args,
        &envs,
        &c.log_path,
        false,
    )
    .with_context(|| format!("starting {}", binary.display()))?;
    Ok(Running::Child(process))
}

/// The reference operator of `version`, which reads its ConfigMap through the cluster.
pub(super) fn reference(c: &ControllerUnderTest, version: &str) -> anyhow::Result<Running> {
    let binary = crate::reference::binary(version);
    let args = vec![
        "--kubeconfig".to_string(),
        c.kubeconfig.display().to_string(),
    ];
    let (program, args) = match &c.inside {
        Some(inside) => inside.command(&binary, &args),
        None => (binary.clone(), args),
    };
    let process = Process::start(
        "appwrapper-operator",
        &program,
        &args,
        &crate::reference::environment(&c.kubeconfig),
        &c.log_path,
        false,
    )
    .with_context(|| format!("starting {}", binary.display()))?;
    Ok(Running::Child(process))
}

/// A user's command, its placeholders replaced and the suite's paths in its environment.
pub(super) fn external(
    c: &ControllerUnderTest,
    command: &ExternalCommand,
) -> anyhow::Result<Running> {
    let operator_config = c
        .config_path
        .parent()
        .map(operator_config_path)
        .unwrap_or_default();
    let command = external_command(
        command,
        &c.kubeconfig,
        &c.config_path,
        &operator_config,
        c.webhook.as_ref(),
    );
    let envs = [
        ("KUBECONFIG", c.kubeconfig.display().to_string()),
        (
            "AWCONF_CONTROLLER_CONFIG",
            c.config_path.display().to_string(),
        ),
        (
            "AWCONF_OPERATOR_CONFIG",
            operator_config.display().to_string(),
        ),
        ("NO_COLOR", "1".to_string()),
    ];
    let (program, args) = command.program_and_args();
    let process = Process::start("controller", &program, &args, &envs, &c.log_path, false)
        .with_context(|| format!("starting `{command}`"))?;
    Ok(Running::Child(process))
}

/// An external command with the run's paths in place of its placeholders.
pub(super) fn external_command(
    command: &ExternalCommand,
    kubeconfig: &Path,
    config: &Path,
    operator_config: &Path,
    webhook: Option<&WebhookEndpoint>,
) -> ExternalCommand {
    command.map(|word| {
        let mut word = word
            .replace("{kubeconfig}", &kubeconfig.display().to_string())
            .replace("{config}", &config.display().to_string())
            .replace("{operator-config}", &operator_config.display().to_string());
        if let Some(webhook) = webhook {
            word = word
                .replace(WEBHOOK_PORT, &webhook.port.to_string())
                .replace(WEBHOOK_CERT_DIR, &webhook.cert_dir.display().to_string());
        }
        word
    })
}

/// `appwrapper-controller` beside the running executable (`target/debug/` or, for a test,
/// its parent).
pub fn find_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the test executable")?;
    let candidates: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join("appwrapper-controller"))
        .collect();
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| {
            anyhow::anyhow!(
                "appwrapper-controller not found (looked at {}); build it with `cargo build -p appwrapper-controller` or set AWCONF_CONTROLLER_BIN",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}
