//! `--kueue-upgrade-from`: the in-place Kueue upgrade scenario (tagged `@kueue-upgrade`). The
//! run starts Kueue at an older release and the scenario replaces it, in place, with the Kueue
//! under test.

use clusters::kueue::{KueueSource, KueueVersion};

use super::{ClusterChoice, SuiteOptions};

/// The tag of scenarios that upgrade Kueue in place.
pub const TAG: &str = "kueue-upgrade";

/// What a run does about `@kueue-upgrade` scenarios.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KueueUpgrade {
    /// Kueue starts at `from`; the scenario upgrades it in place to `to`, the run's Kueue.
    From {
        from: KueueVersion,
        to: KueueVersion,
    },
    /// The upgrade cannot happen on this run: the reason the scenario is skipped with.
    Impossible(String),
}

impl SuiteOptions {
    /// What this run does about `@kueue-upgrade` scenarios. The upgrade starts from
    /// `kueue_upgrade_from`, by default the newest pinned release older than the Kueue under
    /// test. A from-version that is not older than the Kueue under test is an error, reported
    /// before anything starts.
    pub fn kueue_upgrade(&self) -> Result<KueueUpgrade, String> {
        let to = match &self.kueue {
            KueueSource::Release(v) => Some(*v),
            KueueSource::Checkout(_) | KueueSource::Binary { .. } => None,
        };
        if let (Some(from), Some(to)) = (self.kueue_upgrade_from, to)
            && from >= to
        {
            return Err(format!(
                "--kueue-upgrade-from {from} is not older than the Kueue under test {to}: the \
                 upgrade scenario goes from an older release to the one under test"
            ));
        }
        let impossible = |why: String| Ok(KueueUpgrade::Impossible(format!("@{TAG}: {why}")));
        match &self.cluster {
            ClusterChoice::Local => {}
            ClusterChoice::Existing { .. } => {
                return impossible(
                    "Kueue runs inside the existing cluster; only the local cluster's Kueue, \
                     a process of the run, is upgraded in place"
                        .into(),
                );
            }
            ClusterChoice::Created(provider) => {
                return impossible(format!(
                    "Kueue runs inside the {provider} cluster; only the local cluster's Kueue, \
                     a process of the run, is upgraded in place"
                ));
            }
        }
        let Some(to) = to else {
            return impossible(format!(
                "the upgrade goes to a Kueue release (--kueue VERSION), not to the {}",
                self.kueue.label()
            ));
        };
        match self.kueue_upgrade_from.or_else(|| to.previous_pinned()) {
            Some(from) => Ok(KueueUpgrade::From { from, to }),
            None => impossible(format!(
                "no pinned Kueue release is older than {to}; name one with \
                 --kueue-upgrade-from VERSION"
            )),
        }
    }
}

/// Parses a `--kueue-upgrade-from` value; `what` names where it came from in the error.
pub fn parse_upgrade_from(what: &str, tag: &str) -> Result<KueueVersion, String> {
    KueueVersion::parse(tag).map_err(|e| format!("{what}: {e}"))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn v(tag: &str) -> KueueVersion {
        KueueVersion::parse(tag).unwrap()
    }

    fn options(kueue: KueueSource, from: Option<&str>, cluster: ClusterChoice) -> SuiteOptions {
        SuiteOptions {
            kueue,
            kueue_upgrade_from: from.map(v),
            cluster,
            ..SuiteOptions::default()
        }
    }

    #[test]
    fn the_upgrade_starts_from_the_pinned_release_before_unless_told() {
        let release = |tag: &str| KueueSource::Release(v(tag));
        let local = || ClusterChoice::Local;
        let table = [
            (release("v0.19.2"), None, ("v0.18.4", "v0.19.2")),
            (release("v0.19.2"), Some("v0.17.8"), ("v0.17.8", "v0.19.2")),
            (release("v0.20.1"), None, ("v0.19.2", "v0.20.1")),
        ];
        for (kueue, from, (want_from, want_to)) in table {
            assert_eq!(
                options(kueue, from, local()).kueue_upgrade(),
                Ok(KueueUpgrade::From {
                    from: v(want_from),
                    to: v(want_to)
                })
            );
        }
    }

    #[test]
    fn where_no_upgrade_can_happen_the_reason_says_why() {
        let release = KueueSource::Release(v("v0.19.2"));
        let existing = ClusterChoice::Existing {
            kubeconfig: Some(PathBuf::from("/k")),
            context: None,
            install: Vec::new(),
            images: None,
        };
        let kind = ClusterChoice::Created(clusters::Provider::Kind);
        let checkout = KueueSource::Checkout("/src/kueue".into());
        let binary = KueueSource::Binary {
            binary: "/bin/kueue".into(),
            crds: "/crds".into(),
            version: v("v0.19.2"),
        };
        let table = [
            (release.clone(), existing, "existing cluster"),
            (release, kind, "kind cluster"),
            (
                checkout,
                ClusterChoice::Local,
                "not to the checkout /src/kueue",
            ),
            (binary, ClusterChoice::Local, "not to the binary /bin/kueue"),
            (
                KueueSource::Release(v("v0.17.0")),
                ClusterChoice::Local,
                "no pinned Kueue release is older than v0.17.0",
            ),
        ];
        for (kueue, cluster, why) in table {
            match options(kueue, None, cluster).kueue_upgrade() {
                Ok(KueueUpgrade::Impossible(reason)) => {
                    assert!(reason.starts_with("@kueue-upgrade: "), "{reason}");
                    assert!(reason.contains(why), "{reason} lacks {why}");
                }
                other => panic!("{why}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_from_version_must_be_a_tag_older_than_the_kueue_under_test() {
        for from in ["v0.19.2", "v0.20.0"] {
            let e = options(
                KueueSource::Release(v("v0.19.2")),
                Some(from),
                ClusterChoice::Local,
            )
            .kueue_upgrade()
            .unwrap_err();
            assert!(
                e.contains("is not older than the Kueue under test v0.19.2"),
                "{e}"
            );
        }
        let e = parse_upgrade_from("--kueue-upgrade-from", "0.18.4").unwrap_err();
        assert!(e.starts_with("--kueue-upgrade-from: "), "{e}");
        assert!(e.contains("expected a tag like v0.19.2"), "{e}");
    }
}
