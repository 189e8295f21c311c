//! Kubeconfigs rewritten for the harness: one context kept and made current, or the API
//! server's address replaced by the one the host reaches.

use kube::config::Kubeconfig;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KubeconfigEditError {
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
) -> Result<Kubeconfig, KubeconfigEditError> {
    let available: Vec<String> = config.contexts.iter().map(|c| c.name.clone()).collect();
    let wanted = match context.or(config.current_context.as_deref()) {
        Some(name) => name.to_string(),
        None => return Err(KubeconfigEditError::NoCurrentContext { available }),
    };
    let Some(named) = config.contexts.iter().find(|c| c.name == wanted).cloned() else {
        return Err(KubeconfigEditError::MissingContext { wanted, available });
    };
    let dangling = |what, name: &str| KubeconfigEditError::Dangling {
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
pub fn set_server(text: &str, server: &str) -> Result<String, KubeconfigEditError> {
    let mut config =
        Kubeconfig::from_yaml(text).map_err(|e| KubeconfigEditError::Invalid(e.to_string()))?;
    for cluster in config
        .clusters
        .iter_mut()
        .filter_map(|c| c.cluster.as_mut())
    {
        cluster.server = Some(server.to_string());
    }
    to_yaml(&config)
}

pub fn to_yaml(config: &Kubeconfig) -> Result<String, KubeconfigEditError> {
    serde_saphyr::to_string(config).map_err(|e| KubeconfigEditError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Err(KubeconfigEditError::Invalid(_))
        ));
    }
}
