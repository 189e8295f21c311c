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

/// What both placements set alike: the client's rate and the concurrency of its controllers,
/// the integrations the suite needs, and the feature gates.
///
/// The concurrency is the table Kueue's release manifests ship (v0.19's), with AppWrappers
/// given what Jobs get: a configuration file replaces that table, and without one every
/// controller reconciles one object at a time. With a single AppWrapper worker, on a loaded
/// machine, Kueue took 27 s to create a Workload and more than 18 s to unsuspend an
/// AppWrapper it had admitted at once, and scenarios waiting on the controller failed.
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
        "controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
    AppWrapper.workload.codeflare.dev: 5
clientConnection:
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
        let concurrency = &value["controller"]["groupKindConcurrency"];
        assert_eq!(concurrency["AppWrapper.workload.codeflare.dev"], 5);
        assert_eq!(concurrency["Workload.kueue.x-k8s.io"], 10);
        let old: serde_json::Value =
            serde_saphyr::from_str(&render_in_cluster(&KueueVersion(0, 18, 4).feature_gates()))
                .unwrap();
        assert_eq!(old["featureGates"], serde_json::json!({}));
    }
}
