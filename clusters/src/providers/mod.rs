//! The kinds of cluster the harness can run on, one module each (`local` is the embedded
//! control plane; `cli` holds what kind, k3d and k3s share), and `--cluster`'s names for them.

pub mod cli;
pub mod existing;
pub mod k3d;
pub mod k3s;
pub mod kind;
pub mod local;

use std::fmt;
use std::str::FromStr;

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
    pub const ALL: [Provider; 5] = [
        Provider::Local,
        Provider::Kind,
        Provider::K3d,
        Provider::K3s,
        Provider::Existing,
    ];

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

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown cluster provider `{0}`; expected one of: local, kind, k3d, k3s, existing")]
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
            "unknown cluster provider `minikube`; expected one of: local, kind, k3d, k3s, existing"
        );
        for provider in Provider::ALL {
            assert_eq!(provider.to_string().parse::<Provider>(), Ok(provider));
            assert!(message.contains(provider.as_str()), "{provider}");
        }
    }
}
