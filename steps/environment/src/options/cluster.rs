//! The cluster the suite runs on, as `--cluster` names it.

use std::path::PathBuf;

use clusters::Provider;
use clusters::images::Loader;
use clusters::install::Part;

/// Which cluster the suite runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ClusterChoice {
    /// The embedded control plane of crate `clusters`, with the real Kueue manager as a host
    /// process.
    #[default]
    Local,
    /// A cluster that is already up. `install` puts Kueue, KWOK and the controller into it
    /// first (opt-in: it creates nodes and CRDs there).
    Existing {
        /// `None`: kubectl's (the files `KUBECONFIG` lists, or `~/.kube/config`).
        kubeconfig: Option<PathBuf>,
        context: Option<String>,
        install: Vec<Part>,
        /// How built images reach its nodes; found by itself for a local cluster with a
        /// real node.
        images: Option<Loader>,
    },
    /// A kind, k3d or k3s cluster created for the run and deleted after it, with Kueue, KWOK
    /// and the controller installed.
    Created(Provider),
}

impl ClusterChoice {
    /// `--cluster` with its companions: `--kubeconfig`, `--context`, `--install` and
    /// `--load-images` belong to `existing`.
    pub fn parse(
        provider: Provider,
        kubeconfig: Option<PathBuf>,
        context: Option<String>,
        install: Option<&str>,
        images: Option<Loader>,
    ) -> Result<Self, String> {
        let existing_only = [
            (kubeconfig.is_some(), "--kubeconfig"),
            (context.is_some(), "--context"),
            (install.is_some(), "--install"),
        ];
        if provider != Provider::Existing
            && let Some((_, flag)) = existing_only.iter().find(|(given, _)| *given)
        {
            return Err(format!("{flag} goes with --cluster existing"));
        }
        Ok(match provider {
            Provider::Local => ClusterChoice::Local,
            Provider::Existing => ClusterChoice::Existing {
                kubeconfig,
                context,
                install: match install {
                    Some(text) => clusters::install::parse_parts(text)?,
                    None => Vec::new(),
                },
                images,
            },
            created => ClusterChoice::Created(created),
        })
    }

    /// Whether the controller under test runs in the cluster rather than beside it.
    pub fn is_remote(&self) -> bool {
        !matches!(self, ClusterChoice::Local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_flags_parse_with_their_companions() {
        let k = || Some(PathBuf::from("/k"));
        assert_eq!(
            ClusterChoice::parse(Provider::Local, None, None, None, None),
            Ok(ClusterChoice::Local)
        );
        assert_eq!(
            ClusterChoice::parse(
                Provider::Existing,
                k(),
                None,
                Some("controller,kueue"),
                None
            ),
            Ok(ClusterChoice::Existing {
                kubeconfig: Some("/k".into()),
                context: None,
                install: vec![Part::Kueue, Part::Controller],
                images: None,
            })
        );
        assert_eq!(
            ClusterChoice::parse(Provider::Kind, None, None, None, None),
            Ok(ClusterChoice::Created(Provider::Kind))
        );
        assert_eq!(
            ClusterChoice::parse(Provider::Existing, None, Some("c".into()), None, None),
            Ok(ClusterChoice::Existing {
                kubeconfig: None,
                context: Some("c".into()),
                install: Vec::new(),
                images: None,
            })
        );
        let errors = [
            (
                ClusterChoice::parse(Provider::Local, k(), None, None, None),
                "--kubeconfig goes with",
            ),
            (
                ClusterChoice::parse(Provider::Kind, None, None, Some("kueue"), None),
                "--install goes with",
            ),
            (
                ClusterChoice::parse(Provider::Existing, k(), None, Some("kueue,x"), None),
                "unknown component",
            ),
        ];
        for (got, want) in errors {
            let e = got.unwrap_err();
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }
}
