//! `--controller-upgrade-from`: the controller upgrade scenario (tagged `@controller-upgrade`).
//! The scenario stops the controller under test, runs the controller named here in its place on
//! the same cluster until work is in flight, then replaces it with the controller under test:
//! the path of a user who rolls out a newer build of ours, or who replaces the reference
//! operator with ours.

use std::path::PathBuf;

use super::{ClusterChoice, ControllerMode, SuiteOptions};

/// The tag of scenarios that upgrade the controller with work in flight.
pub const TAG: &str = "controller-upgrade";

/// What a run does about `@controller-upgrade` scenarios.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControllerUpgrade {
    /// The scenario runs this controller first (the reference operator or a binary of ours),
    /// then the controller under test.
    From(ControllerMode),
    /// The upgrade cannot happen on this run: the reason the scenario is skipped with.
    Impossible(String),
}

/// Parses a `--controller-upgrade-from` value: `reference` (the pinned operator),
/// `reference:VERSION`, or the path of a build of our controller's binary.
pub fn parse_upgrade_from(value: &str) -> Result<ControllerMode, String> {
    let flag = "--controller-upgrade-from";
    match value.split_once(':') {
        _ if value == "reference" => Ok(ControllerMode::Reference {
            version: clusters::toolchain::APPWRAPPER_DEFAULT.to_string(),
        }),
        Some(("reference", version)) if version.starts_with('v') && version.len() > 1 => {
            Ok(ControllerMode::Reference {
                version: version.to_string(),
            })
        }
        Some(("reference", version)) => Err(format!(
            "{flag} reference:{version}: expected a release tag such as reference:v1.2.2"
        )),
        _ if value.is_empty() => Err(format!(
            "{flag}: expected `reference`, `reference:VERSION` or the path of a controller binary"
        )),
        _ => {
            let path = PathBuf::from(value);
            if !path.is_file() {
                return Err(format!(
                    "{flag} {value}: no such file; name a build of our controller's binary \
                     (`cargo build -p appwrapper-controller` writes target/debug/appwrapper-controller), \
                     or `reference` for the reference operator"
                ));
            }
            Ok(ControllerMode::Process { binary: Some(path) })
        }
    }
}

impl SuiteOptions {
    /// What this run does about `@controller-upgrade` scenarios: the controller they start
    /// from runs beside the local cluster and hands over to a controller the harness starts
    /// itself (embedded, process or reference).
    pub fn controller_upgrade(&self) -> ControllerUpgrade {
        let impossible = |why: String| ControllerUpgrade::Impossible(format!("@{TAG}: {why}"));
        let Some(from) = &self.controller_upgrade_from else {
            return impossible(
                "no controller to upgrade from was named; run with --controller-upgrade-from \
                 reference (the reference operator, replaced by the controller under test) or \
                 --controller-upgrade-from PATH (an older build of ours)"
                    .into(),
            );
        };
        if self.cluster != ClusterChoice::Local {
            return impossible(
                "the controller the upgrade starts from runs beside the local cluster, as the \
                 harness runs its controllers; another cluster runs them as pods"
                    .into(),
            );
        }
        match &self.controller {
            ControllerMode::Reference { .. } if matches!(from, ControllerMode::Process { .. }) => {
                impossible(
                    "a build of ours hands over to ours here, not to the reference operator; \
                     the reference operator hands over to either"
                        .into(),
                )
            }
            ControllerMode::Embedded
            | ControllerMode::Process { .. }
            | ControllerMode::Reference { .. } => ControllerUpgrade::From(from.clone()),
            other => impossible(format!(
                "the upgrade goes to a controller the harness starts itself (embedded, process or \
                 reference), not to the {} controller",
                other.name()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(controller: ControllerMode, from: Option<ControllerMode>) -> SuiteOptions {
        SuiteOptions {
            controller,
            controller_upgrade_from: from,
            ..SuiteOptions::default()
        }
    }

    #[test]
    fn a_from_value_names_the_reference_or_an_existing_binary() {
        assert_eq!(
            parse_upgrade_from("reference"),
            Ok(ControllerMode::Reference {
                version: clusters::toolchain::APPWRAPPER_DEFAULT.into()
            })
        );
        assert_eq!(
            parse_upgrade_from("reference:v1.1.0"),
            Ok(ControllerMode::Reference {
                version: "v1.1.0".into()
            })
        );
        let binary = tempfile::NamedTempFile::new().unwrap();
        let path = binary.path().to_str().unwrap();
        assert_eq!(
            parse_upgrade_from(path),
            Ok(ControllerMode::Process {
                binary: Some(binary.path().to_path_buf())
            })
        );
        for (value, why) in [
            (
                "reference:1.2",
                "expected a release tag such as reference:v1.2.2",
            ),
            ("", "expected `reference`, `reference:VERSION` or the path"),
            ("/no/such/controller", "/no/such/controller: no such file"),
        ] {
            let e = parse_upgrade_from(value).unwrap_err();
            assert!(e.starts_with("--controller-upgrade-from"), "{e}");
            assert!(e.contains(why), "{e} lacks {why}");
        }
    }

    #[test]
    fn the_upgrade_goes_to_a_controller_the_harness_starts_on_the_local_cluster() {
        let from = || {
            Some(ControllerMode::Reference {
                version: "v1.2.2".into(),
            })
        };
        for to in [
            ControllerMode::Embedded,
            ControllerMode::Process { binary: None },
            ControllerMode::Reference {
                version: "v1.2.2".into(),
            },
        ] {
            assert_eq!(
                options(to, from()).controller_upgrade(),
                ControllerUpgrade::From(from().unwrap())
            );
        }
        let installed = ControllerMode::Installed {
            namespace: "appwrapper-system".into(),
        };
        let kind = SuiteOptions {
            cluster: ClusterChoice::Created(clusters::Provider::Kind),
            ..options(ControllerMode::Embedded, from())
        };
        let table = [
            (
                options(ControllerMode::Embedded, None),
                "--controller-upgrade-from reference",
            ),
            (
                options(installed, from()),
                "not to the installed controller",
            ),
            (kind, "runs beside the local cluster"),
            (
                options(
                    ControllerMode::Reference {
                        version: "v1.2.2".into(),
                    },
                    Some(ControllerMode::Process {
                        binary: Some("/old".into()),
                    }),
                ),
                "not to the reference operator",
            ),
        ];
        for (options, why) in table {
            match options.controller_upgrade() {
                ControllerUpgrade::Impossible(reason) => {
                    assert!(reason.starts_with("@controller-upgrade: "), "{reason}");
                    assert!(reason.contains(why), "{reason} lacks {why}");
                }
                other => panic!("{why}: {other:?}"),
            }
        }
    }
}
