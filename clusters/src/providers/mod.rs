//! The kinds of cluster the harness can run on, one module each (`local` is the embedded
//! control plane; `cli` holds what kind, k3d and k3s share), and `--cluster`'s names for them.

pub mod cli;
pub mod existing;
pub mod k3d;
pub mod k3s;
pub mod kind;
pub mod local;

use cli::CliCluster;

use crate::cluster::ClusterError;

use std::fmt;
use std::str::FromStr;

/// How often the kubelets of the clusters we create sync each pod (1m by default). A pod's
/// Secret volumes follow the Secret only at such a sync: Kueue, whose own webhook
/// certificates reach it that way, served 1.3 s after it wrote them in one run and 82 s in
/// the next.
pub const KUBELET_SYNC_FREQUENCY: &str = "5s";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// The embedded control plane, run as host processes.
    Local,
    Kind,
    K3d,
    /// k3s in a container, through the docker CLI.
    K3s,
    /// A cluster reached through a kubeconfig.
    Existing,
}

impl Provider {
    /// In the order `--cluster` lists them: the two a run does not create first.
    pub const ALL: [Provider; 5] = [
        Provider::Local,
        Provider::Existing,
        Provider::Kind,
        Provider::K3d,
        Provider::K3s,
    ];

    /// What `--cluster` with this name runs on, for help texts.
    pub fn about(self) -> &'static str {
        match self {
            Provider::Local => "The embedded control plane, started for the run",
            Provider::Kind => "A kind cluster created for the run and deleted after it",
            Provider::K3d => "A k3d cluster created for the run and deleted after it",
            Provider::K3s => "A k3s container created for the run and deleted after it",
            Provider::Existing => {
                "Yours: --kubeconfig, or kubectl's (KUBECONFIG, else ~/.kube/config) and its \
                 current context"
            }
        }
    }

    /// Creates a cluster of this provider with its defaults, deleted when the value is
    /// dropped: the providers a run creates through their command-line tools.
    pub async fn create(self) -> Result<CliCluster, ClusterError> {
        match self {
            Provider::Kind => kind::up(kind::KindOptions::default()).await,
            Provider::K3d => k3d::up(k3d::K3dOptions::default()).await,
            Provider::K3s => k3s::up(k3s::K3sOptions::default()).await,
            Provider::Local | Provider::Existing => {
                Err(ClusterError::Provider(Box::new(NotCreated(self))))
            }
        }
    }

    /// What [`Provider::create`] is doing, for progress lines.
    pub fn creating(self) -> &'static str {
        match self {
            Provider::Kind => "creating a kind cluster",
            Provider::K3d => "creating a k3d cluster",
            Provider::K3s => "starting a k3s container",
            Provider::Local => "starting the embedded control plane",
            Provider::Existing => "connecting to the cluster",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Local => "local",
            Provider::Kind => "kind",
            Provider::K3d => "k3d",
            Provider::K3s => "k3s",
            Provider::Existing => "existing",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// [`Provider::create`] on a provider that is not created through a command-line tool.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("--cluster {0} is not created by a run")]
pub struct NotCreated(pub Provider);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown cluster provider `{0}`; expected one of: {names}", names = Provider::ALL.map(Provider::as_str).join(", "))]
pub struct UnknownProvider(pub String);

impl FromStr for Provider {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProvider(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_to_providers() {
        for (name, parsed) in [
            ("local", Ok(Provider::Local)),
            ("kind", Ok(Provider::Kind)),
            ("k3d", Ok(Provider::K3d)),
            ("k3s", Ok(Provider::K3s)),
            ("existing", Ok(Provider::Existing)),
            ("Kind", Err(UnknownProvider("Kind".into()))),
            ("minikube", Err(UnknownProvider("minikube".into()))),
            ("", Err(UnknownProvider("".into()))),
        ] {
            assert_eq!(name.parse::<Provider>(), parsed, "{name:?}");
        }
    }

    #[test]
    fn every_provider_prints_as_it_parses_and_the_error_lists_them_all() {
        let message = UnknownProvider("minikube".into()).to_string();
        assert_eq!(
            message,
            "unknown cluster provider `minikube`; expected one of: local, existing, kind, k3d, k3s"
        );
        for provider in Provider::ALL {
            assert_eq!(provider.to_string().parse::<Provider>(), Ok(provider));
            assert!(message.contains(provider.as_str()), "{provider}");
        }
    }

    #[tokio::test]
    async fn only_the_command_line_providers_are_created_by_a_run() {
        for provider in [Provider::Local, Provider::Existing] {
            let error = provider.create().await.err().expect("not created");
            assert_eq!(
                error.to_string(),
                format!("--cluster {provider} is not created by a run")
            );
        }
        for provider in Provider::ALL {
            assert!(!provider.about().is_empty(), "{provider}");
            assert!(!provider.creating().is_empty(), "{provider}");
        }
    }
}
