//! The controller under test, as `--controller` names it.

use std::path::PathBuf;

use super::ExternalCommand;

/// In an external command: the port its webhook server listens on (loopback).
pub const WEBHOOK_PORT: &str = "{webhook-port}";
/// In an external command: the directory with its serving certificate.
pub const WEBHOOK_CERT_DIR: &str = "{webhook-cert-dir}";

/// The controller under test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ControllerMode {
    /// Our controller, in this process (`appwrapper_controller::control_loop::run`).
    #[default]
    Embedded,
    /// Our binary as a child process, so that it can be SIGKILLed. `None` looks for
    /// `appwrapper-controller` beside the test executable (`cargo build -p appwrapper-controller`).
    Process { binary: Option<PathBuf> },
    /// Any command (a shell line or an argv), for example the reference operator. `{kubeconfig}` and
    /// `{config}` in it are replaced by the paths of the cluster's kubeconfig and of the
    /// suite's controller configuration; `KUBECONFIG` is set as well. A command that names
    /// `{webhook-port}` serves the AppWrapper webhooks there (TLS, with `tls.crt` and
    /// `tls.key` from `{webhook-cert-dir}`), and the run registers them.
    External { command: ExternalCommand },
    /// The reference Go operator at this version, built from its module into the cache and
    /// run as a child process configured through its own ConfigMap.
    Reference { version: String },
    /// Our controller installed into the cluster from its install manifests, with the suite's
    /// settings: from `image` when given (the nodes must be able to pull it), otherwise our
    /// binary made into an image and loaded into the nodes. Stopping scales its Deployment to
    /// zero; killing also deletes its pod with grace period 0.
    InCluster { image: Option<String> },
    /// A controller already installed in the cluster, in `namespace`, with the reference
    /// operator's release object names (Deployment `appwrapper-controller-manager`, ConfigMap
    /// `appwrapper-operator-config`): ours or the reference. The run writes the suite's
    /// settings into its ConfigMap and restarts it; stops and kills go through its Deployment.
    Installed { namespace: String },
}

impl ControllerMode {
    /// `embedded`, `process`, `external`, `reference` or `in-cluster`; `command` is
    /// required by `external`.
    pub fn parse(
        mode: &str,
        command: Option<ExternalCommand>,
        binary: Option<PathBuf>,
    ) -> Result<Self, String> {
        match mode {
            "embedded" | "" => Ok(ControllerMode::Embedded),
            "process" => Ok(ControllerMode::Process { binary }),
            "reference" => Ok(ControllerMode::Reference {
                version: clusters::toolchain::APPWRAPPER_DEFAULT.to_string(),
            }),
            "in-cluster" => Ok(ControllerMode::InCluster { image: None }),
            "installed" => Ok(ControllerMode::Installed {
                namespace: "appwrapper-system".into(),
            }),
            "external" => command
                .filter(|c| !c.is_blank())
                .map(|command| ControllerMode::External { command })
                .ok_or_else(|| {
                    "controller mode `external` needs a command: the words after `--`, or \
                     AWCONF_CONTROLLER_COMMAND"
                        .to_string()
                }),
            other => Err(format!(
                "unknown controller mode {other:?}: expected embedded, process, external, reference, in-cluster or installed"
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ControllerMode::Embedded => "embedded",
            ControllerMode::Process { .. } => "process",
            ControllerMode::External { .. } => "external",
            ControllerMode::Reference { .. } => "reference",
            ControllerMode::InCluster { .. } => "in-cluster",
            ControllerMode::Installed { .. } => "installed",
        }
    }

    /// The controller as the run's messages name it: `the reference operator v1.2.2`, `our
    /// binary /path/to/it`.
    pub fn describe(&self) -> String {
        match self {
            ControllerMode::Reference { version } => format!("the reference operator {version}"),
            ControllerMode::Process { binary: Some(path) } => {
                format!("our binary {}", path.display())
            }
            ControllerMode::Process { binary: None } => "our binary".into(),
            other => format!("the {} controller", other.name()),
        }
    }

    /// Sets the reference operator's version (a no-op for the other modes).
    pub fn with_reference_version(self, v: Option<String>) -> Self {
        match (self, v) {
            (ControllerMode::Reference { .. }, Some(version)) => {
                ControllerMode::Reference { version }
            }
            (mode, _) => mode,
        }
    }

    /// Sets the in-cluster controller's image (a no-op for the other modes).
    pub fn with_image(self, image: Option<String>) -> Self {
        match (self, image) {
            (ControllerMode::InCluster { .. }, Some(image)) => {
                ControllerMode::InCluster { image: Some(image) }
            }
            (mode, _) => mode,
        }
    }

    /// Sets the installed controller's namespace (a no-op for the other modes).
    pub fn with_namespace(self, namespace: Option<String>) -> Self {
        match (self, namespace) {
            (ControllerMode::Installed { .. }, Some(namespace)) => {
                ControllerMode::Installed { namespace }
            }
            (mode, _) => mode,
        }
    }

    /// The namespace whose service accounts this controller runs as, when it runs in the
    /// cluster (elsewhere it runs with the run's own credentials).
    pub fn service_account_namespace(&self) -> Option<&str> {
        match self {
            ControllerMode::InCluster { .. } => {
                Some(clusters::install::controller::manifests::NAMESPACE)
            }
            ControllerMode::Installed { namespace } => Some(namespace),
            _ => None,
        }
    }

    /// Whether this controller runs in the cluster (the others run on this machine and
    /// need the local cluster).
    pub fn in_cluster(&self) -> bool {
        matches!(
            self,
            ControllerMode::InCluster { .. } | ControllerMode::Installed { .. }
        )
    }

    /// Whether the harness can start more of this controller, each reconciling only the
    /// AppWrappers labelled for it (our controller: embedded, as a process, or installed by
    /// the run, as a Deployment of its own): a scenario that stops the controller then gets
    /// one of its own and runs beside the others.
    pub fn starts_own_controllers(&self) -> bool {
        matches!(
            self,
            ControllerMode::Embedded
                | ControllerMode::Process { .. }
                | ControllerMode::InCluster { .. }
        )
    }

    /// A child process that the suite starts and kills (our binary or the reference).
    /// An external command that serves the AppWrapper webhooks (it names `{webhook-port}`).
    pub fn serves_webhooks(&self) -> bool {
        matches!(self, ControllerMode::External { command } if command.names(WEBHOOK_PORT))
    }

    pub fn is_child(&self) -> bool {
        matches!(
            self,
            ControllerMode::Process { .. } | ControllerMode::Reference { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_modes_parse() {
        assert_eq!(
            ControllerMode::parse("", None, None),
            Ok(ControllerMode::Embedded)
        );
        assert_eq!(
            ControllerMode::parse("process", None, None),
            Ok(ControllerMode::Process { binary: None })
        );
        assert!(ControllerMode::parse("external", None, None).is_err());
        assert_eq!(
            ControllerMode::parse(
                "external",
                Some(ExternalCommand::Shell("run {kubeconfig}".into())),
                None
            ),
            Ok(ControllerMode::External {
                command: ExternalCommand::Shell("run {kubeconfig}".into())
            })
        );
        assert!(ControllerMode::parse("kind", None, None).is_err());
        let installed = ControllerMode::parse("installed", None, None).unwrap();
        assert!(installed.in_cluster());
        assert_eq!(
            installed.with_namespace(Some("aw".into())),
            ControllerMode::Installed {
                namespace: "aw".into()
            }
        );
        let in_cluster = ControllerMode::parse("in-cluster", None, None).unwrap();
        assert!(in_cluster.in_cluster());
        assert_eq!(
            in_cluster.with_image(Some("example.com/aw:1".into())),
            ControllerMode::InCluster {
                image: Some("example.com/aw:1".into())
            }
        );
        let reference = ControllerMode::parse("reference", None, None).unwrap();
        assert_eq!(
            reference,
            ControllerMode::Reference {
                version: "v1.2.2".into()
            }
        );
        assert_eq!(
            reference.with_reference_version(Some("v1.2.1".into())),
            ControllerMode::Reference {
                version: "v1.2.1".into()
            }
        );
        assert_eq!(
            ControllerMode::Embedded.with_reference_version(Some("v1.2.1".into())),
            ControllerMode::Embedded
        );
    }
}
