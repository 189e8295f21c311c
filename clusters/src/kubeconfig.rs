//! Kubeconfigs for the harness: written for a client certificate, or rewritten with one
//! context kept and made current, or with the API server's address replaced by the one the
//! host reaches. Always through kube's `Kubeconfig`, so paths with spaces or quotes survive.

use std::path::Path;

use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KubeconfigError {
    #[error("no context `{wanted}` in the kubeconfig; its contexts: {}", list(.available))]
    MissingContext {
        wanted: String,
        available: Vec<String>,
    },
    #[error("the kubeconfig has no current context; name one of its contexts: {}", list(.available))]
    NoCurrentContext { available: Vec<String> },
    #[error("context `{context}` refers to {what} `{name}`, which the kubeconfig does not define")]
    Dangling {
        context: String,
        what: &'static str,
        name: String,
    },
    #[error("invalid kubeconfig: {0}")]
    Invalid(String),
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".into()
    } else {
        names.join(", ")
    }
}

/// A kubeconfig with only `context` (the current context when `None`), its cluster and its
/// user, and that context current: whatever the user's file says later, or `KUBECONFIG`
/// says, the harness talks to the cluster it was given.
pub fn pin_context(
    config: Kubeconfig,
    context: Option<&str>,
) -> Result<Kubeconfig, KubeconfigError> {
    let available: Vec<String> = config.contexts.iter().map(|c| c.name.clone()).collect();
    let wanted = match context.or(config.current_context.as_deref()) {
        Some(name) => name.to_string(),
        None => return Err(KubeconfigError::NoCurrentContext { available }),
    };
    let Some(named) = config.contexts.iter().find(|c| c.name == wanted).cloned() else {
        return Err(KubeconfigError::MissingContext { wanted, available });
    };
    let dangling = |what, name: &str| KubeconfigError::Dangling {
        context: wanted.clone(),
        what,
        name: name.to_string(),
    };
    let ctx = named.context.clone().unwrap_or_default();
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .cloned()
        .ok_or_else(|| dangling("cluster", &ctx.cluster))?;
    let auth_infos = match &ctx.user {
        Some(user) => vec![
            config
                .auth_infos
                .iter()
                .find(|a| &a.name == user)
                .cloned()
                .ok_or_else(|| dangling("user", user))?,
        ],
        None => Vec::new(),
    };
    Ok(Kubeconfig {
        clusters: vec![cluster],
        auth_infos,
        contexts: vec![named],
        current_context: Some(wanted),
        ..config
    })
}

/// Every cluster of `text` served at `server` (k3s writes `https://127.0.0.1:6443`, the port
/// inside its container).
pub fn set_server(text: &str, server: &str) -> Result<String, KubeconfigError> {
    let mut config =
        Kubeconfig::from_yaml(text).map_err(|e| KubeconfigError::Invalid(e.to_string()))?;
    for cluster in config
        .clusters
        .iter_mut()
        .filter_map(|c| c.cluster.as_mut())
    {
        cluster.server = Some(server.to_string());
    }
    to_yaml(&config)
}

/// The files kubectl reads when no `--kubeconfig` is given: those `KUBECONFIG` lists, or
/// `~/.kube/config`.
pub fn kubectl_default_paths() -> Vec<std::path::PathBuf> {
    let listed: Vec<_> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if !listed.is_empty() {
        return listed;
    }
    std::env::home_dir()
        .map(|home| vec![home.join(".kube").join("config")])
        .unwrap_or_default()
}

/// Where kubectl's kubeconfig comes from, for messages: `KUBECONFIG (a:b)` or the file.
pub fn describe_kubectl_default() -> String {
    match std::env::var("KUBECONFIG") {
        Ok(list) if !list.is_empty() => format!("KUBECONFIG ({list})"),
        _ => kubectl_default_paths()
            .first()
            .map_or("~/.kube/config".into(), |p| p.display().to_string()),
    }
}

/// A kubeconfig with one context, `awconf`: the cluster at `server` trusted through the CA
/// file `ca`, and the user `user` presenting the certificate `cert` with the key `key`.
pub fn client_certificate(
    server: &str,
    ca: &Path,
    user: &str,
    cert: &Path,
    key: &Path,
) -> Result<String, KubeconfigError> {
    let path = |p: &Path| Some(p.display().to_string());
    let name = "awconf".to_string();
    to_yaml(&Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: name.clone(),
            cluster: Some(Cluster {
                server: Some(server.to_string()),
                certificate_authority: path(ca),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: user.to_string(),
            auth_info: Some(AuthInfo {
                client_certificate: path(cert),
                client_key: path(key),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: name.clone(),
            context: Some(Context {
                cluster: name.clone(),
                user: Some(user.to_string()),
                ..Default::default()
            }),
            other: Default::default(),
        }],
        current_context: Some(name),
        ..Default::default()
    })
}

pub fn to_yaml(config: &Kubeconfig) -> Result<String, KubeconfigError> {
    serde_saphyr::to_string(config).map_err(|e| KubeconfigError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_certificate_kubeconfig_keeps_awkward_paths_whole() {
        let dir = Path::new("/tmp/a dir: with 'quotes' and \"more\"\n#x");
        let text = client_certificate(
            "https://127.0.0.1:6443",
            &dir.join("ca.crt"),
            "admin",
            &dir.join("admin.crt"),
            &dir.join("admin.key"),
        )
        .unwrap();
        let config = Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(config.current_context.as_deref(), Some("awconf"));
        let context = config.contexts[0].context.clone().unwrap();
        assert_eq!(
            (context.cluster.as_str(), context.user.as_deref()),
            ("awconf", Some("admin"))
        );
        let cluster = config.clusters[0].cluster.clone().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
        let ca = dir.join("ca.crt").display().to_string();
        assert_eq!(cluster.certificate_authority.as_deref(), Some(ca.as_str()));
        let user = config.auth_infos[0].auth_info.clone().unwrap();
        let key = dir.join("admin.key").display().to_string();
        assert_eq!(user.client_key.as_deref(), Some(key.as_str()));
    }

    /// As k3s writes `/etc/rancher/k3s/k3s.yaml` (keys shortened).
    const K3S_KUBECONFIG: &str = "\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: Q0EK
    server: https://127.0.0.1:6443
  name: default
contexts:
- context:
    cluster: default
    user: default
  name: default
current-context: default
kind: Config
preferences: {}
users:
- name: default
  user:
    client-certificate-data: Q0VSVAo=
    client-key-data: S0VZCg==
";

    const TWO_CONTEXTS: &str = "\
apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {server: 'https://prod.example:6443'}
- name: lab
  cluster: {server: 'https://lab.example:6443', certificate-authority: /etc/lab/ca.crt}
users:
- name: alice
  user: {token: secret-a}
- name: bob
  user: {token: secret-b}
contexts:
- name: prod-admin
  context: {cluster: prod, user: alice, namespace: team}
- name: lab-bob
  context: {cluster: lab, user: bob}
current-context: prod-admin
";

    fn summary(config: &Kubeconfig) -> (Option<String>, Vec<String>, Vec<String>, Vec<String>) {
        (
            config.current_context.clone(),
            config.contexts.iter().map(|c| c.name.clone()).collect(),
            config.clusters.iter().map(|c| c.name.clone()).collect(),
            config.auth_infos.iter().map(|a| a.name.clone()).collect(),
        )
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn pinning_keeps_one_context_with_its_cluster_and_user() {
        for (context, kept) in [
            (None, ("prod-admin", "prod", "alice")),
            (Some("prod-admin"), ("prod-admin", "prod", "alice")),
            (Some("lab-bob"), ("lab-bob", "lab", "bob")),
        ] {
            let config = Kubeconfig::from_yaml(TWO_CONTEXTS).unwrap();
            let pinned = pin_context(config, context).unwrap();
            assert_eq!(
                summary(&pinned),
                (
                    Some(kept.0.to_string()),
                    strings(&[kept.0]),
                    strings(&[kept.1]),
                    strings(&[kept.2])
                ),
                "{context:?}"
            );
        }
    }

    fn yaml(text: &str) -> serde_json::Value {
        serde_saphyr::from_str(text).unwrap()
    }

    #[test]
    fn a_pinned_kubeconfig_keeps_what_the_client_needs() {
        let config = Kubeconfig::from_yaml(TWO_CONTEXTS).unwrap();
        let written = yaml(&to_yaml(&pin_context(config, Some("lab-bob")).unwrap()).unwrap());
        assert_eq!(written["current-context"], "lab-bob");
        assert_eq!(
            written["clusters"][0]["cluster"],
            serde_json::json!({"server": "https://lab.example:6443", "certificate-authority": "/etc/lab/ca.crt"})
        );
        assert_eq!(
            written["users"][0]["user"],
            serde_json::json!({"token": "secret-b"})
        );
        assert_eq!(
            written["contexts"][0]["context"],
            serde_json::json!({"cluster": "lab", "user": "bob"})
        );
    }

    #[test]
    fn a_context_that_cannot_be_pinned_is_an_error_that_lists_the_contexts() {
        let no_current = TWO_CONTEXTS.replace("current-context: prod-admin\n", "");
        let dangling = TWO_CONTEXTS.replace("cluster: lab, user: bob", "cluster: gone, user: bob");
        for (text, context, message) in [
            (
                TWO_CONTEXTS,
                Some("staging"),
                "no context `staging` in the kubeconfig; its contexts: prod-admin, lab-bob",
            ),
            (
                no_current.as_str(),
                None,
                "the kubeconfig has no current context; name one of its contexts: prod-admin, lab-bob",
            ),
            (
                "apiVersion: v1\nkind: Config\n",
                Some("x"),
                "no context `x` in the kubeconfig; its contexts: (none)",
            ),
            (
                dangling.as_str(),
                Some("lab-bob"),
                "context `lab-bob` refers to cluster `gone`, which the kubeconfig does not define",
            ),
        ] {
            let config = Kubeconfig::from_yaml(text).unwrap();
            assert_eq!(
                pin_context(config, context).unwrap_err().to_string(),
                message
            );
        }
    }

    #[test]
    fn the_server_is_replaced_and_everything_else_is_kept() {
        for server in ["https://127.0.0.1:32771", "https://[::1]:40000"] {
            let mut expected = yaml(K3S_KUBECONFIG);
            expected["clusters"][0]["cluster"]["server"] = server.into();
            assert_eq!(yaml(&set_server(K3S_KUBECONFIG, server).unwrap()), expected);
        }
    }

    #[test]
    fn a_kubeconfig_that_is_not_yaml_is_an_error() {
        assert!(matches!(
            set_server("clusters: [", "https://127.0.0.1:1"),
            Err(KubeconfigError::Invalid(_))
        ));
    }
}
