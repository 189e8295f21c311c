//! Table-driven tests of decide; case names follow the spec's tables.
//!
//! The default world: an AppWrapper `aw` with one component, a `batch/v1` Job `job` whose one
//! PodSet has 2 replicas (2 expected pods), and the default fault-tolerance configuration
//! (admission 60 s, warmup 300 s, failure 60 s, retry pause 90 s, retry limit 3, forceful
//! deletion 600 s). Times are seconds after an arbitrary origin.

mod catalogue;
mod deletion;
mod fault_tolerance;
mod requeue;
mod resuming;
mod transitions;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::api::condition::*;
use crate::api::{AppWrapperComponentStatus, AppWrapperPodSet, AppWrapperStatus};

const ORIGIN: i64 = 1_750_000_000;

pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(ORIGIN + secs).unwrap()
}

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

pub fn cond(type_: &str, status: &str, reason: &str, ltt: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: Time(at(ltt)),
        observed_generation: None,
    }
}

fn job_pod_sets() -> Vec<AppWrapperPodSet> {
    vec![AppWrapperPodSet {
        path: "template.spec.template".into(),
        replicas: Some(2),
        ..Default::default()
    }]
}

fn job_status(rd: Option<(&str, &str)>) -> AppWrapperComponentStatus {
    AppWrapperComponentStatus {
        name: if rd.is_some() {
            "job".into()
        } else {
            String::new()
        },
        kind: if rd.is_some() {
            "Job".into()
        } else {
            String::new()
        },
        api_version: if rd.is_some() {
            "batch/v1".into()
        } else {
            String::new()
        },
        pod_sets: job_pod_sets(),
        conditions: rd
            .map(|(s, r)| vec![cond(RESOURCES_DEPLOYED, s, r, 0)])
            .unwrap_or_default(),
    }
}

pub fn desired(name: &str) -> DesiredObject {
    DesiredObject {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: name.into(),
        object: json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}}),
    }
}

pub fn found() -> ObjectState {
    ObjectState::Found(FoundObject {
        deleting: false,
        controlled: true,
        failed_conditions: 0,
    })
}

pub fn pod(name: &str, phase: PodPhase) -> PodObservation {
    PodObservation {
        name: name.into(),
        phase,
        node_name: Some("node-a".into()),
        ..Default::default()
    }
}

pub fn failed_pod(name: &str, exit_code: i32) -> PodObservation {
    PodObservation {
        exit_codes: vec![exit_code],
        ..pod(name, PodPhase::Failed)
    }
}

pub fn gpu_pod(name: &str, node: &str) -> PodObservation {
    PodObservation {
        node_name: Some(node.into()),
        resources: BTreeSet::from(["nvidia.com/gpu".to_owned()]),
        ..pod(name, PodPhase::Running)
    }
}

pub fn running_pods(n: usize) -> Vec<PodObservation> {
    (0..n)
        .map(|i| pod(&format!("p{i}"), PodPhase::Running))
        .collect()
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub status: AppWrapperStatus,
    pub obs: Observation,
    pub now: Timestamp,
    pub config: Config,
}

impl Scenario {
    fn base(
        phase: Phase,
        conditions: Vec<Condition>,
        component: AppWrapperComponentStatus,
    ) -> Self {
        Scenario {
            status: AppWrapperStatus {
                phase,
                resetting_count: 0,
                conditions,
                component_status: vec![component],
            },
            obs: Observation {
                name: "aw".into(),
                has_finalizer: true,
                component_count: 1,
                effective_pod_sets: Ok(vec![job_pod_sets()]),
                components: vec![ComponentObservation {
                    object: found(),
                    desired: None,
                }],
                ..Observation::default()
            },
            now: at(10),
            config: Config::default(),
        }
    }

    pub fn decide(&self) -> Decision {
        decide(&self.status, &self.obs, self.now, &self.config)
    }

    pub fn now(mut self, secs: i64) -> Self {
        self.now = at(secs);
        self
    }

    pub fn suspend(mut self) -> Self {
        self.obs.suspend = true;
        self
    }

    pub fn count(mut self, n: i32) -> Self {
        self.status.resetting_count = n;
        self
    }

    pub fn annotate(mut self, key: &str, value: &str) -> Self {
        self.obs.annotations.insert(key.into(), value.into());
        self
    }

    pub fn pods(mut self, pods: Vec<PodObservation>) -> Self {
        self.obs.pods = pods;
        self
    }

    /// Replace (or add) an AppWrapper condition.
    pub fn cond(mut self, type_: &str, status: &str, reason: &str, ltt: i64) -> Self {
        self.status.conditions.retain(|c| c.type_ != type_);
        self.status
            .conditions
            .push(cond(type_, status, reason, ltt));
        self
    }

    /// Set the message of an existing AppWrapper condition.
    pub fn msg(mut self, type_: &str, message: &str) -> Self {
        if let Some(c) = self.status.conditions.iter_mut().find(|c| c.type_ == type_) {
            c.message = message.into();
        }
        self
    }

    pub fn object(mut self, state: ObjectState) -> Self {
        self.obs.components[0].object = state;
        self
    }

    /// The component was deleted, as undeploying records it.
    pub fn component_deleted(mut self) -> Self {
        self.status.component_status[0] = job_status(Some(("False", "CompononetDeleted")));
        self
    }

    /// All wrapped objects and pods are gone.
    pub fn gone(self) -> Self {
        self.object(ObjectState::NotFound).pods(vec![])
    }

    pub fn with(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }
}

fn deployed_conditions(deployed_at: i64) -> Vec<Condition> {
    vec![
        cond(QUOTA_RESERVED, "True", "Resuming", deployed_at),
        cond(RESOURCES_DEPLOYED, "True", "Resuming", deployed_at),
        cond(PODS_READY, "False", "Resuming", deployed_at),
        cond(UNHEALTHY, "False", "Resuming", deployed_at),
    ]
}

pub fn empty() -> Scenario {
    Scenario::base(Phase::Empty, vec![], job_status(None)).with(|s| {
        s.status.component_status.clear();
        s.obs.has_finalizer = false;
        s.obs.components[0].object = ObjectState::NotObserved;
    })
}

/// Suspended, never deployed; the component can be built once `spec.suspend` is false.
pub fn suspended() -> Scenario {
    Scenario::base(Phase::Suspended, vec![], job_status(None)).with(|s| {
        s.obs.has_finalizer = false;
        s.obs.components[0] = ComponentObservation {
            object: ObjectState::NotObserved,
            desired: Some(Ok(desired("job"))),
        };
    })
}

/// Resuming, deployed (RD True) at t=0, component not yet created.
pub fn resuming() -> Scenario {
    Scenario::base(Phase::Resuming, deployed_conditions(0), job_status(None)).with(|s| {
        s.obs.components[0] = ComponentObservation {
            object: ObjectState::NotObserved,
            desired: Some(Ok(desired("job"))),
        };
    })
}

/// Running, deployed at t=0, the Job exists, no pods yet.
pub fn running() -> Scenario {
    Scenario::base(
        Phase::Running,
        deployed_conditions(0),
        job_status(Some(("True", "ComponentCreatedSuccessfully"))),
    )
}

/// Resetting after an unhealthy verdict at t=0; the Job still exists (and could be built
/// again).
pub fn resetting() -> Scenario {
    running()
        .with(|s| {
            s.status.phase = Phase::Resetting;
            s.obs.components[0].desired = Some(Ok(desired("job")));
        })
        .cond(UNHEALTHY, "True", "FoundFailedPods", 0)
}

pub fn suspending() -> Scenario {
    running()
        .with(|s| s.status.phase = Phase::Suspending)
        .suspend()
}

pub fn failed() -> Scenario {
    running().with(|s| s.status.phase = Phase::Failed).cond(
        UNHEALTHY,
        "True",
        "MissingComponent",
        0,
    )
}

/// Succeeded at t=100 after deployment at t=0.
pub fn succeeded() -> Scenario {
    running()
        .with(|s| s.status.phase = Phase::Succeeded)
        .cond(QUOTA_RESERVED, "False", "Succeeded", 100)
        .cond(RESOURCES_DEPLOYED, "True", "Succeeded", 0)
        .pods(vec![
            pod("p0", PodPhase::Succeeded),
            pod("p1", PodPhase::Succeeded),
        ])
}

/// Deleted (deletionTimestamp set) while Running, finalizer present.
pub fn deleted() -> Scenario {
    running().with(|s| s.obs.deletion_requested = true)
}

pub fn condition<'a>(d: &'a Decision, type_: &str) -> &'a Condition {
    crate::conditions::find(&d.status.conditions, type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {:#?}", d.status.conditions))
}

/// (status, reason, message) of a condition.
pub fn csm(d: &Decision, type_: &str) -> (String, String, String) {
    let c = condition(d, type_);
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

pub fn ltt(d: &Decision, type_: &str) -> Timestamp {
    condition(d, type_).last_transition_time.0
}

pub fn component_cond(d: &Decision, index: usize) -> Option<(String, String)> {
    crate::conditions::find(
        &d.status.component_status[index].conditions,
        RESOURCES_DEPLOYED,
    )
    .map(|c| (c.status.clone(), c.reason.clone()))
}

/// `(reason, action, message)` of each event.
pub fn events(d: &Decision) -> Vec<(String, String, String)> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Event {
                reason,
                action,
                message,
            } => Some((reason.clone(), action.clone(), message.clone())),
            _ => None,
        })
        .collect()
}

pub fn deletes(d: &Decision) -> Vec<(usize, bool)> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::DeleteComponent {
                index, forceful, ..
            } => Some((*index, *forceful)),
            _ => None,
        })
        .collect()
}

pub fn pod_deletes(d: &Decision) -> Vec<String> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::ForceDeletePod { name } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

pub fn no_execute(node: &str) -> BTreeMap<String, BTreeSet<String>> {
    BTreeMap::from([(
        node.to_owned(),
        BTreeSet::from(["nvidia.com/gpu".to_owned()]),
    )])
}
