//! The API server's audit log, for measurements that count requests by client: one JSON line
//! per request at the Metadata level (who, what, when; no bodies), written in batches so that
//! the log costs the API server little.

use std::path::{Path, PathBuf};

/// Every request once, when it is received: a watch or a long request would otherwise be
/// logged again when its response starts and when it ends.
pub const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, ResponseComplete, Panic]
rules:
- level: Metadata
";

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

    #[test]
    fn the_policy_logs_metadata_once_per_request() {
        let policy: serde_json::Value = serde_saphyr::from_str(POLICY).unwrap();
        assert_eq!(policy["rules"][0]["level"], "Metadata");
        assert!(
            !policy["omitStages"]
                .as_array()
                .unwrap()
                .contains(&"RequestReceived".into())
        );
        let args = apiserver_args(Path::new("/w"));
        assert!(args.contains(&"--audit-log-path=/w/logs/audit.log".to_string()));
        assert!(args.contains(&"--audit-policy-file=/w/audit-policy.yaml".to_string()));
    }
}
