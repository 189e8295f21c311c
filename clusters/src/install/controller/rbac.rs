//! The controller's RBAC: the reference operator's release roles (v1.2.2), rule for rule,
//! so that ours needs no more than the reference is granted.

use serde_json::{Value, json};

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({ "apiGroups": groups, "resources": resources, "verbs": verbs })
}

const MANAGE: &[&str] = &["create", "delete", "get", "list", "watch"];

/// `appwrapper-manager-role`.
pub fn manager_rules() -> Vec<Value> {
    vec![
        rule(&[""], &["events"], &["create", "patch", "update", "watch"]),
        rule(&[""], &["nodes"], &["get", "list", "watch"]),
        rule(&[""], &["pods", "services"], MANAGE),
        rule(&[""], &["secrets"], &["get", "list", "update", "watch"]),
        rule(
            &["admissionregistration.k8s.io"],
            &[
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
            ],
            &["get", "list", "update", "watch"],
        ),
        rule(
            &["apiextensions.k8s.io"],
            &["customresourcedefinitions"],
            &["list"],
        ),
        rule(&["apps"], &["deployments", "statefulsets"], MANAGE),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"],
        ),
        rule(&["batch"], &["jobs"], MANAGE),
        rule(&["jobset.x-k8s.io"], &["jobsets"], MANAGE),
        rule(&["kubeflow.org"], &["pytorchjobs"], MANAGE),
        rule(&["ray.io"], &["rayclusters", "rayjobs"], MANAGE),
        rule(
            &["scheduling.sigs.k8s.io", "scheduling.x-k8s.io"],
            &["podgroups"],
            MANAGE,
        ),
        rule(
            &["workload.codeflare.dev"],
            &["appwrappers"],
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ],
        ),
        rule(
            &["workload.codeflare.dev"],
            &["appwrappers/finalizers"],
            &["update"],
        ),
        rule(
            &["workload.codeflare.dev"],
            &["appwrappers/status"],
            &["get", "patch", "update"],
        ),
    ]
}

/// `appwrapper-leader-election-role`, in the controller's namespace.
pub fn leader_election_rules() -> Vec<Value> {
    let all = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    vec![
        rule(&[""], &["configmaps"], &all),
        rule(&["coordination.k8s.io"], &["leases"], &all),
        rule(&[""], &["events"], &["create", "patch"]),
    ]
}

/// `appwrapper-metrics-auth-role`: what serving `/metrics` behind authn/authz needs.
pub fn metrics_auth_rules() -> Vec<Value> {
    vec![
        rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"],
        ),
    ]
}

const APPWRAPPERS: &[&str] = &["workload.codeflare.dev"];

/// `appwrapper-metrics-reader`: what a Prometheus service account is bound to, to scrape
/// `/metrics` through the authenticated endpoint.
pub fn metrics_reader_rules() -> Vec<Value> {
    vec![json!({ "nonResourceURLs": ["/metrics"], "verbs": ["get"] })]
}

/// `appwrapper-editor-role`, aggregated into the built-in `admin` and `edit` roles.
pub fn editor_rules() -> Vec<Value> {
    vec![
        rule(
            APPWRAPPERS,
            &["appwrappers"],
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ],
        ),
        rule(APPWRAPPERS, &["appwrappers/status"], &["get"]),
    ]
}

/// `appwrapper-viewer-role`, aggregated into the built-in `view` role.
pub fn viewer_rules() -> Vec<Value> {
    vec![
        rule(APPWRAPPERS, &["appwrappers"], &["get", "list", "watch"]),
        rule(APPWRAPPERS, &["appwrappers/status"], &["get"]),
    ]
}

/// `appwrapper-user-role`, for binding to users who submit AppWrappers. `appwrappers/finalizer`
/// (singular, a resource that does not exist) is the reference's, kept so that a binding
/// grants the same under either controller.
pub fn user_rules() -> Vec<Value> {
    vec![
        rule(APPWRAPPERS, &["appwrappers"], MANAGE),
        rule(APPWRAPPERS, &["appwrappers/status"], &["get"]),
        rule(APPWRAPPERS, &["appwrappers/finalizer"], &["update"]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_core_events_only() {
        let groups: Vec<Value> = manager_rules()
            .into_iter()
            .filter(|r| {
                r["resources"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("events"))
            })
            .map(|r| r["apiGroups"].clone())
            .collect();
        assert_eq!(groups, vec![json!([""])]);
    }
}
