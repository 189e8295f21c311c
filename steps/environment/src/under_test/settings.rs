//! The controller's settings where each mode reads them: our configuration file, the
//! operator's format for an external command, the operator's ConfigMap for the reference and
//! for a controller in a cluster.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use appwrapper_controller::config::Config;
use clusters::install::controller::manifests::CONFIG_MAP;

use super::ControllerUnderTest;
use crate::operator_config::Placement;
use crate::options::ControllerMode;

impl ControllerUnderTest {
    /// Takes `config` for its next start: its configuration files are written again and, for
    /// a controller that reads the operator's ConfigMap (the reference, one in a cluster), that
    /// ConfigMap. The embedded webhook server is served again with it at once; a controller
    /// that serves its own webhooks takes it when it is restarted.
    pub async fn reconfigure(
        &mut self,
        client: &kube::Client,
        config: Config,
    ) -> anyhow::Result<()> {
        write_config(&config, &self.config_path)?;
        match &self.mode {
            ControllerMode::Embedded => {
                if let Some(server) = self.webhook_server.take() {
                    server.stop().await;
                    let endpoint = self
                        .webhook
                        .as_ref()
                        .context("the embedded webhook server's endpoint is not known")?;
                    self.webhook_server = Some(endpoint.serve(&config, client.clone()).await?);
                }
            }
            ControllerMode::Process { .. } => {}
            ControllerMode::External { .. } => {
                if let Some(dir) = self.config_path.parent() {
                    write_operator_config(&config, &operator_config_path(dir))?;
                }
            }
            ControllerMode::Reference { .. } => {
                let cert_dir = PathBuf::from(crate::reference::CERT_DIR);
                let placement = Placement::Beside {
                    cert_dir: &cert_dir,
                    namespace: crate::reference::NAMESPACE,
                };
                write_config_map(client, &config, crate::reference::NAMESPACE, &placement).await?;
            }
            ControllerMode::InCluster { .. } | ControllerMode::Installed { .. } => {
                let namespace = self.in_cluster()?.namespace.clone();
                let placement = Placement::InCluster {
                    namespace: &namespace,
                };
                write_config_map(client, &config, &namespace, &placement).await?;
            }
        }
        self.config = config;
        Ok(())
    }
}

/// Our controller's configuration file (`--config-file`, `{config}`).
pub(super) fn write_config(config: &Config, path: &Path) -> anyhow::Result<()> {
    let text = serde_saphyr::to_string(config).context("rendering the controller config")?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The operator's ConfigMap in `namespace`, which the reference (and ours in a cluster)
/// reads when it starts.
pub(crate) async fn write_config_map(
    client: &kube::Client,
    config: &Config,
    namespace: &str,
    placement: &Placement<'_>,
) -> anyhow::Result<()> {
    let settings = crate::operator_config::operator_config(config, placement)?;
    let config_map = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": CONFIG_MAP, "namespace": namespace },
        "data": { "config.yaml": objects::yaml::render(&settings) },
    });
    clusters::install::apply::apply(client, &config_map)
        .await
        .with_context(|| format!("writing the settings into {namespace}/{CONFIG_MAP}"))
}

/// Where an external controller finds the suite's settings in the reference operator's own
/// format (`{operator-config}`).
pub fn operator_config_path(report_dir: &Path) -> PathBuf {
    report_dir.join("operator-config.yaml")
}

/// `config.yaml` for the ConfigMap `appwrapper-operator-config` of a controller built from
/// the reference operator's source and run as an external command: the suite's settings,
/// with its webhooks off (the run registers none for an external controller).
pub(super) fn write_operator_config(config: &Config, path: &Path) -> anyhow::Result<()> {
    let cert_dir = path.with_file_name("operator-certs");
    let mut value = crate::operator_config::operator_config(
        config,
        &crate::operator_config::Placement::Beside {
            cert_dir: &cert_dir,
            namespace: EXTERNAL_OPERATOR_NAMESPACE,
        },
    )?;
    value["webhooksEnabled"] = serde_json::json!(false);
    std::fs::write(path, objects::yaml::render(&value))
        .with_context(|| format!("writing {}", path.display()))
}

/// The namespace the operator config of an external controller names (its `NAMESPACE`).
pub const EXTERNAL_OPERATOR_NAMESPACE: &str = "awconf-operator";
