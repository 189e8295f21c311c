//! The pinned Go binaries a run needs, built together before anything starts: a cold first
//! run builds them concurrently instead of one after the other as each part comes up, and a
//! release that does not build stops the run before a cluster exists.

use anyhow::Context as _;
use clusters::kueue::{KueueSource, KueueVersion};
use clusters::toolchain::{self, Component};

use crate::options::{ClusterChoice, ControllerMode, SuiteOptions};

/// What `options` will build on first use, longest build first (each free build slot takes
/// the next one). Other clusters build their own parts when they install them.
/// `controller_from` is the controller the `@controller-upgrade` scenario starts from, when it
/// runs.
pub fn needed(
    options: &SuiteOptions,
    kueue_from: Option<KueueVersion>,
    controller_from: Option<&ControllerMode>,
) -> Vec<Component> {
    let mut needed = Vec::new();
    if options.cluster == ClusterChoice::Local {
        needed.push(Component::kubernetes(&options.kubernetes));
        // A binary built elsewhere still takes its manifests from the release it is closest to.
        if let KueueSource::Release(to) | KueueSource::Binary { version: to, .. } = &options.kueue {
            needed.push(Component::kueue(&to.to_string()));
        }
        if let Some(from) = kueue_from {
            needed.push(Component::kueue(&from.to_string()));
            // The releases an upgrade steps through on its way to the Kueue under test.
            if let KueueSource::Release(to) = &options.kueue {
                for via in from.pinned_between(*to) {
                    needed.push(Component::kueue(&via.to_string()));
                }
            }
        }
        needed.push(Component::kwok());
    }
    for mode in std::iter::once(&options.controller).chain(controller_from) {
        if let ControllerMode::Reference { version } = mode {
            let operator = Component::appwrapper(version);
            if !needed.contains(&operator) {
                needed.push(operator);
            }
        }
    }
    if options.cluster == ClusterChoice::Local {
        needed.push(Component::etcd());
    }
    needed
}

/// Builds what is missing from `needed` into the cache, with progress.
pub async fn build(needed: Vec<Component>) -> anyhow::Result<()> {
    let cache = toolchain::cache_dir();
    if needed.iter().all(|c| c.is_built(&cache)) {
        return Ok(());
    }
    let names: Vec<String> = needed.iter().map(|c| c.to_string()).collect();
    println!(
        "awconf: building on first use, at once where memory allows: {}",
        names.join(", ")
    );
    tokio::task::spawn_blocking(move || toolchain::build_all(&needed, &cache))
        .await
        .context("the toolchain build task failed")?
        .context("building the pinned toolchain")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(options: &SuiteOptions, from: Option<KueueVersion>) -> Vec<String> {
        needed(options, from, None)
            .iter()
            .map(|c| c.to_string())
            .collect()
    }

    #[test]
    fn the_local_cluster_builds_its_control_plane_and_both_ends_of_the_upgrade() {
        let options = SuiteOptions {
            kueue: KueueSource::Release(KueueVersion(0, 19, 2)),
            ..SuiteOptions::default()
        };
        assert_eq!(
            names(&options, Some(KueueVersion(0, 18, 4))),
            [
                "kubernetes v1.36.3",
                "kueue v0.19.2",
                "kueue v0.18.4",
                "kwok v0.8.0",
                "etcd v3.6.16"
            ]
        );
        assert_eq!(
            names(&options, None),
            [
                "kubernetes v1.36.3",
                "kueue v0.19.2",
                "kwok v0.8.0",
                "etcd v3.6.16"
            ]
        );
        // From two releases back, the upgrade steps through the pinned one between.
        assert_eq!(
            names(&options, Some(KueueVersion(0, 17, 0))),
            [
                "kubernetes v1.36.3",
                "kueue v0.19.2",
                "kueue v0.17.0",
                "kueue v0.18.4",
                "kwok v0.8.0",
                "etcd v3.6.16"
            ]
        );
    }

    #[test]
    fn a_kueue_checkout_and_the_reference_operator() {
        let options = SuiteOptions {
            kueue: KueueSource::Checkout("/src/kueue".into()),
            controller: ControllerMode::Reference {
                version: "v1.2.2".into(),
            },
            ..SuiteOptions::default()
        };
        assert_eq!(
            names(&options, None),
            [
                "kubernetes v1.36.3",
                "kwok v0.8.0",
                "appwrapper v1.2.2",
                "etcd v3.6.16"
            ]
        );
    }

    #[test]
    fn a_kueue_binary_built_elsewhere_still_needs_its_release() {
        let options = SuiteOptions {
            kueue: KueueSource::Binary {
                binary: "/opt/kueue".into(),
                crds: "/opt/crds".into(),
                version: KueueVersion(0, 18, 4),
            },
            ..SuiteOptions::default()
        };
        assert!(names(&options, None).contains(&"kueue v0.18.4".to_string()));
    }

    #[test]
    fn another_cluster_builds_only_the_reference_here() {
        let options = SuiteOptions {
            cluster: ClusterChoice::Existing {
                kubeconfig: None,
                context: None,
                install: Vec::new(),
                images: None,
            },
            controller: ControllerMode::Reference {
                version: "v1.2.2".into(),
            },
            ..SuiteOptions::default()
        };
        assert_eq!(names(&options, None), ["appwrapper v1.2.2"]);
        let embedded = SuiteOptions {
            controller: ControllerMode::Embedded,
            ..options
        };
        assert!(names(&embedded, None).is_empty());
    }

    #[test]
    fn the_reference_the_controller_upgrade_starts_from_is_built_once() {
        let reference = ControllerMode::Reference {
            version: "v1.2.2".into(),
        };
        let built = |options: &SuiteOptions, from: Option<&ControllerMode>| {
            needed(options, None, from)
                .iter()
                .filter(|c| c.to_string() == "appwrapper v1.2.2")
                .count()
        };
        let embedded = SuiteOptions::default();
        assert_eq!(built(&embedded, None), 0);
        assert_eq!(built(&embedded, Some(&reference)), 1);
        let binary = ControllerMode::Process {
            binary: Some("/old/appwrapper-controller".into()),
        };
        assert_eq!(built(&embedded, Some(&binary)), 0);
        let on_reference = SuiteOptions {
            controller: reference.clone(),
            ..SuiteOptions::default()
        };
        assert_eq!(built(&on_reference, Some(&reference)), 1);
    }
}
