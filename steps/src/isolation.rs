//! What a run gives a scenario that stops the controller under test (`@own-controller`) so
//! that it need not run alone.

use crate::options::{ClusterChoice, ControllerMode, SuiteOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// Nothing: it runs alone, as its `@serial` tag says.
    Alone,
    /// A controller of its own in the run's cluster, for its AppWrappers only.
    OwnController,
    /// A local cluster of its own, with its own Kueue and controller
    /// ([`crate::environment::own_cluster`]).
    OwnCluster,
}

impl Isolation {
    /// What this run offers, and why it offers nothing when it could have offered a cluster.
    pub fn offered(options: &SuiteOptions) -> (Self, Option<String>) {
        let netns = clusters::netns::Netns::available().map_err(|e| e.to_string());
        match offered_by(&options.controller, &options.cluster, netns) {
            Ok(isolation) => (isolation, None),
            Err(why) => (Isolation::Alone, Some(why)),
        }
    }
}

/// Our controller can be started once more for some AppWrappers. The reference operator
/// cannot, and listens on a fixed port: on the local cluster it gets a cluster of its own per
/// scenario, where this machine can make network namespaces (`netns`).
fn offered_by(
    mode: &ControllerMode,
    cluster: &ClusterChoice,
    netns: Result<(), String>,
) -> Result<Isolation, String> {
    if mode.starts_own_controllers() {
        return Ok(Isolation::OwnController);
    }
    match (mode, cluster) {
        (ControllerMode::Reference { .. }, ClusterChoice::Local) => netns
            .map(|()| Isolation::OwnCluster)
            .map_err(|why| format!("scenarios that stop the reference operator run alone: {why}")),
        _ => Ok(Isolation::Alone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> ControllerMode {
        ControllerMode::Reference {
            version: "v1.2.2".into(),
        }
    }

    #[rstest::rstest]
    #[case::embedded(ControllerMode::Embedded, ClusterChoice::Local, Ok(()), Ok(Isolation::OwnController))]
    #[case::in_cluster(ControllerMode::InCluster { image: None }, ClusterChoice::Local, Ok(()), Ok(Isolation::OwnController))]
    #[case::reference_local(reference(), ClusterChoice::Local, Ok(()), Ok(Isolation::OwnCluster))]
    #[case::reference_without_netns(reference(), ClusterChoice::Local, Err("not root".into()), Err("scenarios that stop the reference operator run alone: not root".into()))]
    #[case::installed(ControllerMode::Installed { namespace: "aw".into() }, ClusterChoice::Local, Ok(()), Ok(Isolation::Alone))]
    fn a_run_offers_what_its_controller_and_machine_allow(
        #[case] mode: ControllerMode,
        #[case] cluster: ClusterChoice,
        #[case] netns: Result<(), String>,
        #[case] offered: Result<Isolation, String>,
    ) {
        assert_eq!(offered_by(&mode, &cluster, netns), offered);
    }
}
