//! The Kueue manager's configuration file for a run outside the cluster.

use std::path::Path;

use super::KueueVersion;

pub struct ConfigInput<'a> {
    pub version: KueueVersion,
    pub webhook_port: u16,
    pub health_port: u16,
    pub cert_dir: &'a Path,
}

pub fn render(input: &ConfigInput) -> String {
    let gates: String = input
        .version
        .feature_gates()
        .iter()
        .map(|(name, on)| format!("  {name}: {on}\n"))
        .collect();
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
clientConnection:
  qps: 300
  burst: 500
integrations:
  frameworks:
  - batch/job
  - workload.codeflare.dev/appwrapper
featureGates:
{gates}",
        health = input.health_port,
        webhook = input.webhook_port,
        cert_dir = input.cert_dir.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_cluster_settings_are_explicit() {
        let text = render(&ConfigInput {
            version: KueueVersion(0, 19, 2),
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
}
