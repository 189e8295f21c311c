//! The plain data that decide reads ([`Observation`]) and asks for ([`Effect`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::api::{AppWrapperPodSet, Phase};

/// Everything decide needs besides the AppWrapper's status.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub name: String,
    pub suspend: bool,
    pub managed_by: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deletion_requested: bool,
    pub has_finalizer: bool,
    pub annotations: BTreeMap<String, String>,
    /// `len(spec.components)`.
    pub component_count: usize,
    /// The effective PodSets of every component (§5.7), or the error computing them.
    pub effective_pod_sets: Result<Vec<Vec<AppWrapperPodSet>>, String>,
    /// Indexed like `spec.components` / `status.componentStatus`.
    pub components: Vec<ComponentObservation>,
    /// Pods labelled `workload.codeflare.dev/appwrapper=<name>` in the namespace, in any phase.
    pub pods: Vec<PodObservation>,
    /// Node name → resources flagged NoExecute by Autopilot on that node (empty when the node
    /// monitor is off).
    pub no_execute_nodes: BTreeMap<String, BTreeSet<String>>,
    /// The result of the create that the previous decision of this reconcile asked for.
    pub create_outcome: Option<CreateOutcome>,
}

impl Default for Observation {
    fn default() -> Self {
        Observation {
            name: String::new(),
            suspend: false,
            managed_by: None,
            deletion_requested: false,
            has_finalizer: false,
            annotations: BTreeMap::new(),
            component_count: 0,
            effective_pod_sets: Ok(Vec::new()),
            components: Vec::new(),
            pods: Vec::new(),
            no_execute_nodes: BTreeMap::new(),
            create_outcome: None,
        }
    }
}

impl Observation {
    pub fn component(&self, index: usize) -> ComponentObservation {
        self.components.get(index).cloned().unwrap_or_default()
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ComponentObservation {
    /// The object named by `status.componentStatus[i]`, as read from the API server.
    pub object: ObjectState,
    /// The object to create for `spec.components[i]` (only built while Resuming).
    pub desired: Option<Result<DesiredObject, BuildFailure>>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub enum ObjectState {
    /// Not read in this reconcile.
    #[default]
    NotObserved,
    NotFound,
    Found(FoundObject),
    /// The read failed.
    Error(String),
    /// A fresh discovery found no resource for its kind: no object of it can exist (its CRD is
    /// absent or was removed).
    Unserved(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoundObject {
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// Its controller owner reference names this AppWrapper.
    pub controlled: bool,
    /// Number of `Failed=True` status conditions, counted for the kinds of §3.3.
    pub failed_conditions: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct DesiredObject {
    pub api_version: String,
    pub kind: String,
    /// `metadata.name`; empty when the template uses `generateName`.
    pub name: String,
    pub object: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildFailure {
    pub message: String,
    pub fatal: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    #[default]
    Unknown,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodObservation {
    pub name: String,
    pub phase: PodPhase,
    pub node_name: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// Non-zero exit codes of the current `state.terminated` of regular containers.
    pub exit_codes: Vec<i32>,
    /// Resources that some regular container requests or limits to a non-zero quantity.
    pub resources: BTreeSet<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateOutcome {
    pub index: usize,
    pub result: CreateResult,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateResult {
    Created {
        name: String,
    },
    /// The create returned AlreadyExists and the existing object was read.
    AlreadyExists {
        name: String,
        /// Name in the object's controller owner reference, if it has one.
        controller: Option<String>,
    },
    /// The create returned AlreadyExists but reading the existing object failed.
    ExistingUnreadable {
        message: String,
    },
    Failed {
        message: String,
        class: CreateErrorClass,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateErrorClass {
    /// The resource type is not served ("no matches for kind").
    NoMatch,
    /// HTTP 422.
    Invalid,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectTarget {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    AddFinalizer,
    RemoveFinalizer,
    CreateComponent {
        index: usize,
        object: serde_json::Value,
    },
    /// DELETE with propagation policy Background, or with `gracePeriodSeconds=0` and no
    /// propagation policy when `forceful`.
    DeleteComponent {
        index: usize,
        target: ObjectTarget,
        forceful: bool,
    },
    /// DELETE a labelled pod with `gracePeriodSeconds=0`.
    ForceDeletePod {
        name: String,
    },
    /// A `Normal` event on the AppWrapper: the reference's `Eventf(aw, nil, Normal, reason,
    /// action, message)`.
    Event {
        reason: String,
        action: String,
        message: String,
    },
    /// Count `appwrapper_phase_total{phase}` once the status patch succeeded.
    CountPhase(Phase),
}
