//! The Kueue manager's configuration: a file for a run outside the cluster, and the content
//! of `kueue-manager-config` for an install into one.

use std::path::Path;

#[cfg(test)]
use super::KueueVersion;

pub struct ConfigInput<'a> {
    /// Feature gates to set (see [`super::KueueSource::feature_gates`]).
    pub gates: Vec<(&'static str, bool)>,
    pub webhook_port: u16,
    pub health_port: u16,
    pub cert_dir: &'a Path,
}

pub fn render(input: &ConfigInput) -> String {
    format!(
        "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
manageJobsWithoutQueueName: false
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: 127.0.0.1:{health}
metrics:
  bindAddress: \"0\"
webhook:
  host: 127.0.0.1
  port: {webhook}
  certDir: {cert_dir}
internalCertManagement:
  enable: false
{common}",
        health = input.health_port,
        webhook = input.webhook_port,
        cert_dir = input.cert_dir.display(),
        common = common(&input.gates),
    )
}

/// The manager config of an in-cluster install: the release's own settings (ports, leader
/// election, internal certificates) with the suite's integrations and feature gates. The
/// visibility server stays on: with it off, deleting a namespace hangs on the APIService.
pub fn render_in_cluster(gates: &[(&str, bool)]) -> String {
    format!(
        "apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
  resourceName: c1f6bfd2.kueue.x-k8s.io
manageJobsWithoutQueueName: false
{}",
        common(
            &gates
                .iter()
                .copied()
                .filter(|(name, _)| *name != "VisibilityOnDemand")
                .collect::<Vec<_>>()
        )
    )
}

/// What both placements set alike: the client's rate, the integrations the suite needs, and
/// the feature gates.
fn common(gates: &[(&str, bool)]) -> String {
    let gates: String = gates
        .iter()
        .map(|(name, on)| format!("  {name}: {on}\n"))
        .collect();
    let gates = if gates.is_empty() {
        "featureGates: {}\n".to_string()
    } else {
        format!("featureGates:\n{gates}")
    };
    format!(
        "clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - batch/job
  - workload.codeflare.dev/appwrapper
{gates}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_cluster_settings_are_explicit() {
        let text = render(&ConfigInput {
            gates: KueueVersion(0, 19, 2).feature_gates(),
            webhook_port: 19443,
            health_port: 18081,
            cert_dir: Path::new("/w/kueue/certs"),
        });
        for line in [
            "leaderElect: false",
            "enable: false",
            "host: 127.0.0.1",
            "port: 19443",
            "healthProbeBindAddress: 127.0.0.1:18081",
            "- workload.codeflare.dev/appwrapper",
            "DisableWaitForPodsReady: true",
            "VisibilityOnDemand: false",
        ] {
            assert!(text.contains(line), "config lacks {line:?}:\n{text}");
        }
    }

    #[test]
    fn in_cluster_settings_keep_the_release_ports_and_the_visibility_server() {
        let text = render_in_cluster(&KueueVersion(0, 19, 2).feature_gates());
        let value: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(value["webhook"]["port"], 9443);
        assert_eq!(value["health"]["healthProbeBindAddress"], ":8081");
        assert_eq!(value["featureGates"]["DisableWaitForPodsReady"], true);
        assert!(value["featureGates"].get("VisibilityOnDemand").is_none());
        assert!(value.get("internalCertManagement").is_none());
        let old: serde_json::Value =
            serde_saphyr::from_str(&render_in_cluster(&KueueVersion(0, 18, 4).feature_gates()))
                .unwrap();
        assert_eq!(old["featureGates"], serde_json::json!({}));
    }
}
