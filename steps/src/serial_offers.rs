//! What a run gives a scenario that stops the controller under test (`@own-controller`), or
//! upgrades Kueue in place (`@kueue-upgrade`), so that it need not run alone.

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

/// What a run offers each kind of scenario that would otherwise run alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offers {
    /// To `@own-controller` scenarios.
    pub own_controller: Isolation,
    /// To the `@kueue-upgrade` scenario, which upgrades the only Kueue of its cluster.
    pub kueue_upgrade: Isolation,
}

impl Offers {
    /// What this run offers, and why it offers nothing where it could have offered a cluster.
    pub fn of(options: &SuiteOptions) -> (Self, Vec<String>) {
        let netns = clusters::netns::Netns::available().map_err(|e| e.to_string());
        let mut why = Vec::new();
        let mut or_alone = |offered: Result<Isolation, String>| {
            offered.unwrap_or_else(|reason| {
                why.push(reason);
                Isolation::Alone
            })
        };
        let offers = Offers {
            own_controller: or_alone(offered_by(
                &options.controller,
                &options.cluster,
                netns.clone(),
            )),
            kueue_upgrade: or_alone(offered_to_upgrade(
                &options.controller,
                &options.cluster,
                netns,
            )),
        };
        (offers, why)
    }

    pub fn any_own_cluster(&self) -> bool {
        self.own_controller == Isolation::OwnCluster || self.kueue_upgrade == Isolation::OwnCluster
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

/// A Kueue of its own comes with a local cluster of its own, where the controller under test
/// can be started once more: ours as it runs (its webhooks at a port of its own), the reference
/// operator in a network namespace (its fixed port).
fn offered_to_upgrade(
    mode: &ControllerMode,
    cluster: &ClusterChoice,
    netns: Result<(), String>,
) -> Result<Isolation, String> {
    match (mode, cluster) {
        (ControllerMode::Embedded | ControllerMode::Process { .. }, ClusterChoice::Local) => {
            Ok(Isolation::OwnCluster)
        }
        (ControllerMode::Reference { .. }, ClusterChoice::Local) => {
            netns.map(|()| Isolation::OwnCluster).map_err(|why| {
                format!("the Kueue upgrade scenario runs alone, before the others: {why}")
            })
        }
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

    #[rstest::rstest]
    #[case::embedded(ControllerMode::Embedded, ClusterChoice::Local, Err("not root".into()), Ok(Isolation::OwnCluster))]
    #[case::reference_local(reference(), ClusterChoice::Local, Ok(()), Ok(Isolation::OwnCluster))]
    #[case::reference_without_netns(reference(), ClusterChoice::Local, Err("not root".into()), Err("the Kueue upgrade scenario runs alone, before the others: not root".into()))]
    #[case::in_cluster(ControllerMode::InCluster { image: None }, ClusterChoice::Local, Ok(()), Ok(Isolation::Alone))]
    #[case::existing(ControllerMode::Embedded, ClusterChoice::Existing { kubeconfig: None, context: None, install: Vec::new(), images: None }, Ok(()), Ok(Isolation::Alone))]
    fn a_kueue_upgrade_gets_a_cluster_where_the_controller_can_start_once_more(
        #[case] mode: ControllerMode,
        #[case] cluster: ClusterChoice,
        #[case] netns: Result<(), String>,
        #[case] offered: Result<Isolation, String>,
    ) {
        assert_eq!(offered_to_upgrade(&mode, &cluster, netns), offered);
    }
}
