//! The API server's audit log, for measurements that count requests by client: one JSON line
//! per request at the Metadata level (who, what, when; no bodies), written in batches so that
//! the log costs the API server little. At [`Detail::Writes`] the writes to AppWrappers and
//! Kueue Workloads also log the object they left, to trace which write answers which.

use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Every request once, when it is received.
    #[default]
    Metadata,
    /// As [`Detail::Metadata`], and each write to an AppWrapper or a Workload once more when
    /// it completes, with the object it wrote and left.
    Writes,
}

/// Every request once, when it is received: a watch or a long request would otherwise be
/// logged again when its response starts and when it ends.
const METADATA: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, Panic]
rules:
- level: Metadata
  omitStages: [ResponseComplete]
";

const WRITES: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, Panic]
rules:
- level: RequestResponse
  verbs: [create, update, patch, delete]
  resources:
  - group: workload.codeflare.dev
    resources: [appwrappers, appwrappers/status]
  - group: kueue.x-k8s.io
    resources: [workloads, workloads/status]
- level: Metadata
  omitStages: [ResponseComplete]
";

pub fn policy(detail: Detail) -> &'static str {
    match detail {
        Detail::Metadata => METADATA,
        Detail::Writes => WRITES,
    }
}

pub fn policy_path(work_dir: &Path) -> PathBuf {
    work_dir.join("audit-policy.yaml")
}

pub fn log_path(work_dir: &Path) -> PathBuf {
    work_dir.join("logs").join("audit.log")
}

/// The API server's flags for the log; the policy must be at [`policy_path`].
pub fn apiserver_args(work_dir: &Path) -> Vec<String> {
    vec![
        format!("--audit-policy-file={}", policy_path(work_dir).display()),
        format!("--audit-log-path={}", log_path(work_dir).display()),
        "--audit-log-format=json".into(),
        "--audit-log-mode=batch".into(),
        "--audit-log-maxsize=0".into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(detail: Detail) -> serde_json::Value {
        serde_saphyr::from_str(policy(detail)).unwrap()
    }

    #[test]
    fn the_metadata_policy_logs_each_request_once_when_received() {
        let policy = parsed(Detail::Metadata);
        let omitted = |v: &serde_json::Value| v.as_array().unwrap().clone();
        assert!(!omitted(&policy["omitStages"]).contains(&"RequestReceived".into()));
        let rule = &policy["rules"][0];
        assert_eq!(rule["level"], "Metadata");
        assert!(omitted(&rule["omitStages"]).contains(&"ResponseComplete".into()));
        let args = apiserver_args(Path::new("/w"));
        assert!(args.contains(&"--audit-log-path=/w/logs/audit.log".to_string()));
        assert!(args.contains(&"--audit-policy-file=/w/audit-policy.yaml".to_string()));
    }

    #[test]
    fn the_writes_policy_keeps_the_objects_of_appwrapper_and_workload_writes_only() {
        let policy = parsed(Detail::Writes);
        let first = &policy["rules"][0];
        assert_eq!(first["level"], "RequestResponse");
        assert!(first.get("omitStages").is_none());
        let groups: Vec<&str> = first["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["group"].as_str().unwrap())
            .collect();
        assert_eq!(groups, ["workload.codeflare.dev", "kueue.x-k8s.io"]);
        assert_eq!(policy["rules"][1], parsed(Detail::Metadata)["rules"][0]);
    }
}
