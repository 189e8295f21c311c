//! Our controller's install manifests: the objects of the reference operator's release
//! install (namespace `appwrapper-system`, the same names, roles no wider), running our image.

use appwrapper_controller::webhook::{MUTATE_PATH, VALIDATE_PATH};
use serde_json::{Value, json};

use super::rbac;

pub const NAMESPACE: &str = "appwrapper-system";
pub const DEPLOYMENT: &str = "appwrapper-controller-manager";
pub const SERVICE_ACCOUNT: &str = "appwrapper-controller-manager";
pub const CONFIG_MAP: &str = "appwrapper-operator-config";
pub const SECRET: &str = "appwrapper-webhook-server-cert";
pub const WEBHOOK_SERVICE: &str = "appwrapper-webhook-service";
pub const METRICS_SERVICE: &str = "appwrapper-controller-manager-metrics-service";
pub const MUTATING: &str = "appwrapper-mutating-webhook-configuration";
pub const VALIDATING: &str = "appwrapper-validating-webhook-configuration";
/// The labels of the controller's pods.
pub const POD_SELECTOR: &str = "control-plane=controller-manager";
pub const CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// What varies between installs.
#[derive(Clone, Debug)]
pub struct Settings {
    pub image: String,
    /// `Never` for an image loaded without a registry; `IfNotPresent` for a published one.
    pub pull_policy: String,
    /// `config.yaml` of the ConfigMap.
    pub config_yaml: String,
    /// `Fail` as released; the suite uses `Ignore` so that scenarios can create AppWrappers
    /// while they keep the controller down.
    pub failure_policy: String,
    /// A serving certificate for the Service, when the installer provides one: (CA PEM,
    /// certificate PEM, key PEM). Without it the Secret is created empty, as released.
    pub certificate: Option<(String, String, String)>,
    /// `--appwrapper-selector`: the AppWrappers it reconciles (`None`: all, as released).
    pub appwrapper_selector: Option<String>,
}

impl Settings {
    pub fn release(image: &str) -> Self {
        Settings {
            image: image.to_string(),
            pull_policy: "IfNotPresent".into(),
            config_yaml: "controllerManager:\n  health:\n    bindAddress: \":8081\"\n  metrics:\n    bindAddress: \":8443\"\n  leaderElection: true\n".into(),
            failure_policy: "Fail".into(),
            certificate: None,
            appwrapper_selector: None,
        }
    }
}

fn labels() -> Value {
    json!({
        "app.kubernetes.io/name": "appwrapper",
        "app.kubernetes.io/component": "controller",
        "control-plane": "controller-manager",
    })
}

fn meta(name: &str, namespaced: bool) -> Value {
    let mut meta = json!({ "name": name, "labels": labels() });
    if namespaced {
        meta["namespace"] = json!(NAMESPACE);
    }
    meta
}

fn object(api_version: &str, kind: &str, name: &str, namespaced: bool) -> Value {
    json!({ "apiVersion": api_version, "kind": kind, "metadata": meta(name, namespaced) })
}

/// Every object of the install, in apply order.
pub fn render(settings: &Settings) -> Vec<Value> {
    let mut objects = vec![
        object("v1", "Namespace", NAMESPACE, false),
        serde_json::to_value(appwrapper_controller::crd::appwrapper_crd())
            .expect("the CRD serializes"),
        object("v1", "ServiceAccount", SERVICE_ACCOUNT, true),
    ];
    objects.extend(roles());
    let mut config_map = object("v1", "ConfigMap", CONFIG_MAP, true);
    config_map["data"] = json!({ "config.yaml": settings.config_yaml });
    objects.push(config_map);
    objects.push(secret(settings));
    objects.push(service(WEBHOOK_SERVICE, 443, 9443, None));
    objects.push(service(METRICS_SERVICE, 8443, 8443, Some("https")));
    objects.push(deployment(settings));
    objects.extend(webhooks(settings));
    objects
}

fn roles() -> Vec<Value> {
    let rbac_api = "rbac.authorization.k8s.io/v1";
    let subject =
        json!([{ "kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE }]);
    let binding = |kind: &str, name: &str, role_kind: &str, role: &str| {
        let mut b = object(rbac_api, kind, name, kind == "RoleBinding");
        b["roleRef"] =
            json!({ "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role });
        b["subjects"] = subject.clone();
        b
    };
    let role = |kind: &str, name: &str, rules: Vec<Value>| {
        let mut r = object(rbac_api, kind, name, kind == "Role");
        r["rules"] = json!(rules);
        r
    };
    vec![
        role(
            "Role",
            "appwrapper-leader-election-role",
            rbac::leader_election_rules(),
        ),
        role(
            "ClusterRole",
            "appwrapper-manager-role",
            rbac::manager_rules(),
        ),
        role(
            "ClusterRole",
            "appwrapper-metrics-auth-role",
            rbac::metrics_auth_rules(),
        ),
        role(
            "ClusterRole",
            "appwrapper-metrics-reader",
            rbac::metrics_reader_rules(),
        ),
        aggregated(
            role(
                "ClusterRole",
                "appwrapper-editor-role",
                rbac::editor_rules(),
            ),
            &["admin", "edit"],
        ),
        aggregated(
            role(
                "ClusterRole",
                "appwrapper-viewer-role",
                rbac::viewer_rules(),
            ),
            &["view"],
        ),
        role("ClusterRole", "appwrapper-user-role", rbac::user_rules()),
        binding(
            "RoleBinding",
            "appwrapper-leader-election-rolebinding",
            "Role",
            "appwrapper-leader-election-role",
        ),
        binding(
            "ClusterRoleBinding",
            "appwrapper-manager-rolebinding",
            "ClusterRole",
            "appwrapper-manager-role",
        ),
        binding(
            "ClusterRoleBinding",
            "appwrapper-metrics-auth-rolebinding",
            "ClusterRole",
            "appwrapper-metrics-auth-role",
        ),
    ]
}

/// `role` with the labels that fold its rules into the built-in ClusterRoles `into`.
fn aggregated(mut role: Value, into: &[&str]) -> Value {
    for name in into {
        role["metadata"]["labels"][format!("rbac.authorization.k8s.io/aggregate-to-{name}")] =
            json!("true");
    }
    role
}

fn secret(settings: &Settings) -> Value {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut secret = object("v1", "Secret", SECRET, true);
    if let Some((ca, cert, key)) = &settings.certificate {
        secret["data"] = json!({ "ca.crt": b64(ca), "tls.crt": b64(cert), "tls.key": b64(key) });
    }
    secret
}

fn service(name: &str, port: u16, target: u16, port_name: Option<&str>) -> Value {
    let mut service = object("v1", "Service", name, true);
    let mut port = json!({ "port": port, "protocol": "TCP", "targetPort": target });
    if let Some(n) = port_name {
        port["name"] = json!(n);
    }
    service["spec"] =
        json!({ "ports": [port], "selector": { "control-plane": "controller-manager" } });
    service
}

fn deployment(s: &Settings) -> Value {
    let mut args = vec!["--zap-log-level=2".to_string()];
    args.extend(
        s.appwrapper_selector
            .iter()
            .map(|selector| format!("--appwrapper-selector={selector}")),
    );
    let probe = |path: &str, delay: u32, period: u32, failures: u32| json!({ "httpGet": { "path": path, "port": 8081 }, "initialDelaySeconds": delay, "periodSeconds": period, "failureThreshold": failures });
    let mut deployment = object("apps/v1", "Deployment", DEPLOYMENT, true);
    deployment["spec"] = json!({
        "replicas": 1,
        "selector": { "matchLabels": { "control-plane": "controller-manager" } },
        "template": {
            "metadata": {
                "annotations": { "kubectl.kubernetes.io/default-container": "manager" },
                "labels": labels(),
            },
            "spec": {
                "securityContext": { "runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": { "type": "RuntimeDefault" } },
                "serviceAccountName": SERVICE_ACCOUNT,
                "terminationGracePeriodSeconds": 10,
                "containers": [{
                    "name": "manager",
                    "image": s.image,
                    "imagePullPolicy": s.pull_policy,
                    "command": ["/manager"],
                    "args": args,
                    "env": [{ "name": "NAMESPACE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } }],
                    "ports": [
                        { "containerPort": 9443, "name": "webhook-server", "protocol": "TCP" },
                        { "containerPort": 8443, "name": "metrics", "protocol": "TCP" },
                    ],
                    "securityContext": { "allowPrivilegeEscalation": false, "capabilities": { "drop": ["ALL"] } },
                    "livenessProbe": probe("/healthz", 15, 20, 3),
                    // Every second from the start, failing as long as before (1 s + 3 × 2 s).
                    "readinessProbe": probe("/readyz", 0, 1, 7),
                    "resources": {
                        "limits": { "cpu": "2", "memory": "256Mi" },
                        "requests": { "cpu": "100m", "memory": "64Mi" },
                    },
                    "volumeMounts": [
                        { "name": "cert", "mountPath": CERT_DIR, "readOnly": true },
                    ],
                }],
                "volumes": [
                    { "name": "cert", "secret": { "secretName": SECRET, "defaultMode": 420 } },
                ],
            },
        },
    });
    deployment
}

fn webhooks(s: &Settings) -> Vec<Value> {
    use base64::Engine as _;
    let webhook = |name: &str, path: &str, operations: &[&str]| {
        let mut client_config = json!({
            "service": { "name": WEBHOOK_SERVICE, "namespace": NAMESPACE, "path": path },
        });
        if let Some((ca, _, _)) = &s.certificate {
            client_config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(ca));
        }
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": client_config,
            "failurePolicy": s.failure_policy,
            "sideEffects": "None",
            "rules": [{
                "apiGroups": ["workload.codeflare.dev"],
                "apiVersions": ["v1beta2"],
                "operations": operations,
                "resources": ["appwrappers"],
            }],
        })
    };
    let api = "admissionregistration.k8s.io/v1";
    let mut mutating = object(api, "MutatingWebhookConfiguration", MUTATING, false);
    mutating["webhooks"] = json!([webhook("mappwrapper.kb.io", MUTATE_PATH, &["CREATE"])]);
    let mut validating = object(api, "ValidatingWebhookConfiguration", VALIDATING, false);
    validating["webhooks"] = json!([webhook(
        "vappwrapper.kb.io",
        VALIDATE_PATH,
        &["CREATE", "UPDATE"]
    )]);
    vec![mutating, validating]
}

/// The objects as one YAML stream (`install.yaml`).
pub fn to_yaml(objects: &[Value]) -> Result<String, String> {
    let mut text = String::new();
    for object in objects {
        text.push_str("---\n");
        text.push_str(&serde_saphyr::to_string(object).map_err(|e| e.to_string())?);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(objects: &[Value]) -> Vec<String> {
        objects
            .iter()
            .map(|o| {
                format!(
                    "{} {}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn the_release_objects_carry_the_reference_names() {
        let objects = render(&Settings::release("example.com/appwrapper:v1"));
        let names = names(&objects);
        for want in [
            "Namespace appwrapper-system",
            "CustomResourceDefinition appwrappers.workload.codeflare.dev",
            "ServiceAccount appwrapper-controller-manager",
            "Role appwrapper-leader-election-role",
            "ClusterRole appwrapper-manager-role",
            "ClusterRoleBinding appwrapper-manager-rolebinding",
            "ConfigMap appwrapper-operator-config",
            "Secret appwrapper-webhook-server-cert",
            "Service appwrapper-webhook-service",
            "Service appwrapper-controller-manager-metrics-service",
            "Deployment appwrapper-controller-manager",
            "MutatingWebhookConfiguration appwrapper-mutating-webhook-configuration",
            "ValidatingWebhookConfiguration appwrapper-validating-webhook-configuration",
        ] {
            assert!(
                names.contains(&want.to_string()),
                "missing {want}: {names:?}"
            );
        }
        let released = Settings::release("x");
        let secret = objects.iter().find(|o| o["kind"] == "Secret").unwrap();
        assert!(secret.get("data").is_none(), "released empty");
        assert!(released.config_yaml.contains("leaderElection: true"));
    }

    #[test]
    fn an_installer_certificate_fills_the_secret_and_both_ca_bundles() {
        let mut settings = Settings::release("x");
        settings.certificate = Some(("CA".into(), "CERT".into(), "KEY".into()));
        settings.failure_policy = "Ignore".into();
        let objects = render(&settings);
        let secret = objects.iter().find(|o| o["kind"] == "Secret").unwrap();
        assert_eq!(secret["data"]["tls.crt"], "Q0VSVA==");
        for kind in [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ] {
            let config = objects.iter().find(|o| o["kind"] == kind).unwrap();
            let webhook = &config["webhooks"][0];
            assert_eq!(webhook["clientConfig"]["caBundle"], "Q0E=", "{kind}");
            assert_eq!(webhook["failurePolicy"], "Ignore", "{kind}");
            assert_eq!(webhook["clientConfig"]["service"]["name"], WEBHOOK_SERVICE);
        }
    }

    #[test]
    fn the_yaml_stream_parses_back_to_the_same_objects() {
        let objects = render(&Settings::release("x"));
        let text = to_yaml(&objects).unwrap();
        let back = crate::install::manifests::parse(&text).unwrap();
        assert_eq!(back, objects);
    }
}
