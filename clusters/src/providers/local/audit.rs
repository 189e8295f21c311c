//! The API server's audit log: one JSON line per request at the Metadata level (who, what,
//! when; no bodies), for measurements that count requests by client, and, for the invariant
//! monitor, each write to an AppWrapper once more when it completes, with the object it left,
//! and the answer to each creation and deletion of anything but credentials and events and to
//! each write to a pod, so that the monitor knows what of a workload existed at any write.
//! Written as each request completes (blocking mode), so that a killed API server loses no
//! line of a write it answered. At [`Detail::Writes`] the writes to Kueue Workloads also log
//! the object they left, to trace which write answers which.

use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Detail {
    /// Every request once, when it is received.
    Metadata,
    /// As [`Detail::Metadata`], and each write to an AppWrapper once more when it completes,
    /// with the object it left, and the answers that tell when objects were created and
    /// removed.
    #[default]
    AppWrapperWrites,
    /// As [`Detail::AppWrapperWrites`], and the writes to Kueue Workloads as well.
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

/// As [`METADATA`], with the objects each write (create, update, patch, delete,
/// deletecollection) to these resources left logged once more when it completes; then the
/// same for each create and delete of anything but what carries credentials (secrets, tokens
/// and their reviews, config maps) or is written too often to be worth it (events, leases),
/// and for each update and patch of a pod (one that takes away the last finalizer of a
/// deleted pod removes it).
fn writes_policy(resources: &str) -> String {
    format!(
        "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, Panic]
rules:
- level: RequestResponse
  verbs: [create, update, patch, delete, deletecollection]
  resources:
{resources}- level: Metadata
  omitStages: [ResponseComplete]
  resources:
  - group: \"\"
    resources: [secrets, configmaps, serviceaccounts/token, events]
  - group: events.k8s.io
  - group: authentication.k8s.io
  - group: authorization.k8s.io
  - group: certificates.k8s.io
  - group: coordination.k8s.io
- level: RequestResponse
  verbs: [create, delete]
- level: RequestResponse
  verbs: [update, patch]
  resources:
  - group: \"\"
    resources: [pods]
- level: Metadata
  omitStages: [ResponseComplete]
"
    )
}

const APPWRAPPERS: &str = "  - group: workload.codeflare.dev
    resources: [appwrappers, appwrappers/status]
";

const WORKLOADS: &str = "  - group: kueue.x-k8s.io
    resources: [workloads, workloads/status]
";

pub fn policy(detail: Detail) -> String {
    match detail {
        Detail::Metadata => METADATA.to_string(),
        Detail::AppWrapperWrites => writes_policy(APPWRAPPERS),
        Detail::Writes => writes_policy(&format!("{APPWRAPPERS}{WORKLOADS}")),
    }
}

/// Whether the log holds every AppWrapper write with the object it left.
pub fn logs_appwrapper_writes(detail: Detail) -> bool {
    detail != Detail::Metadata
}

pub fn policy_path(work_dir: &Path) -> PathBuf {
    work_dir.join("audit-policy.yaml")
}

pub fn log_path(work_dir: &Path) -> PathBuf {
    work_dir.join("logs").join("audit.log")
}

/// The log is never rotated (the API server would otherwise start a new file at 100 MB, the
/// default), so that a reader follows one file for the cluster's life.
const MAX_SIZE_MB: u32 = 1 << 20;

/// The API server's flags for the log; the policy must be at [`policy_path`].
pub fn apiserver_args(work_dir: &Path) -> Vec<String> {
    vec![
        format!("--audit-policy-file={}", policy_path(work_dir).display()),
        format!("--audit-log-path={}", log_path(work_dir).display()),
        "--audit-log-format=json".into(),
        "--audit-log-mode=blocking".into(),
        format!("--audit-log-maxsize={MAX_SIZE_MB}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(detail: Detail) -> serde_json::Value {
        serde_saphyr::from_str(&policy(detail)).unwrap()
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

    #[rstest::rstest]
    #[case::for_the_monitor(Detail::AppWrapperWrites, &["workload.codeflare.dev"])]
    #[case::for_the_write_trace(Detail::Writes, &["workload.codeflare.dev", "kueue.x-k8s.io"])]
    fn the_writes_policies_keep_the_objects_of_writes_to_their_resources_only(
        #[case] detail: Detail,
        #[case] expected: &[&str],
    ) {
        let policy = parsed(detail);
        let first = &policy["rules"][0];
        assert_eq!(first["level"], "RequestResponse");
        assert!(first.get("omitStages").is_none());
        assert!(
            first["verbs"]
                .as_array()
                .unwrap()
                .contains(&"deletecollection".into()),
            "a namespace's deletion removes its AppWrappers with one request"
        );
        let groups = groups_of(first);
        assert_eq!(groups, expected);
        let rules = policy["rules"].as_array().unwrap();
        assert_eq!(rules.last(), Some(&parsed(Detail::Metadata)["rules"][0]));
        assert!(logs_appwrapper_writes(detail));
        assert!(!logs_appwrapper_writes(Detail::Metadata));
    }

    /// The API groups a policy rule names, in order.
    fn groups_of(rule: &serde_json::Value) -> Vec<&str> {
        rule["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["group"].as_str().unwrap())
            .collect()
    }

    /// First match wins: credentials are excluded before the rule that logs every creation.
    #[test]
    fn no_credential_is_ever_logged_with_its_body() {
        let policy = parsed(Detail::AppWrapperWrites);
        let rules = policy["rules"].as_array().unwrap();
        let excluded = &rules[1];
        assert_eq!(excluded["level"], "Metadata");
        let core = excluded["resources"][0]["resources"].as_array().unwrap();
        for secret in ["secrets", "configmaps", "serviceaccounts/token"] {
            assert!(core.contains(&secret.into()), "{secret}");
        }
        let groups = groups_of(excluded);
        assert!(groups.contains(&"authentication.k8s.io"));
        assert!(groups.contains(&"certificates.k8s.io"));
        assert_eq!(rules[2]["level"], "RequestResponse");
        assert!(rules[2].get("resources").is_none(), "every other creation");
    }
}
