//! deleteComponents (§4.7), undeploying a phase's components, and the handling of a deleted
//! AppWrapper (§2.2).

use k8s_openapi::jiff::Timestamp;

use super::reasons::*;
use super::{Decider, Effect, ObjectState, ObjectTarget, REQUEUE_DELETING};
use crate::api::condition::{DELETING_RESOURCES, QUOTA_RESERVED, RESOURCES_DEPLOYED};
use crate::api::{AppWrapperComponentStatus, AppWrapperStatus, Phase};
use crate::conditions::{self, CondStatus};

/// A component may exist unless its RD condition is absent, `False`, or `Unknown` without a name.
fn may_exist(cs: &AppWrapperComponentStatus) -> bool {
    match conditions::find(&cs.conditions, RESOURCES_DEPLOYED) {
        None => false,
        Some(c) if c.status == CondStatus::True.as_str() => true,
        Some(c) if c.status == CondStatus::Unknown.as_str() => !cs.name.is_empty(),
        Some(_) => false,
    }
}

/// Deliberately unlike the reference, which decides from the status alone: an object this
/// AppWrapper controls that was read under the component's name exists, whatever its RD
/// condition says. A component recreated after a reset keeps RD `False/CompononetDeleted` until
/// the status write that follows its create; when that write loses to a deletion, the reference
/// releases the quota with the object still there and leaves it to the garbage collector.
fn seen_controlled(cs: &AppWrapperComponentStatus, object: &ObjectState) -> bool {
    !cs.name.is_empty() && matches!(object, ObjectState::Found(found) if found.controlled)
}

fn target(cs: &AppWrapperComponentStatus) -> ObjectTarget {
    ObjectTarget {
        api_version: cs.api_version.clone(),
        kind: cs.kind.clone(),
        name: cs.name.clone(),
    }
}

impl Decider<'_> {
    /// Returns whether deletion is complete: no component left and no labelled pod.
    pub(super) fn delete_components(&mut self) -> bool {
        self.set(DELETING_RESOURCES, CondStatus::True, DELETION_INITIATED, "");
        let mut remaining = Vec::new();
        for index in 0..self.status.component_status.len() {
            let cs = &self.status.component_status[index];
            let object = self.obs.component(index).object;
            if !may_exist(cs) && !seen_controlled(cs, &object) {
                continue;
            }
            let target = target(cs);
            match object {
                ObjectState::NotFound => self.deleted(index),
                ObjectState::Unserved(why) => {
                    // Deliberately unlike the reference, which retries such a delete forever
                    // and so never lets the AppWrapper go.
                    self.deleted(index);
                    self.event(
                        COMPONENT_DELETED,
                        TERMINATING,
                        format!(
                            "{} {:?} counts as deleted: {why}, so no such object can exist",
                            target.kind, target.name
                        ),
                    );
                }
                ObjectState::Found(found) if !found.controlled => {
                    self.warnings.push(format!(
                        "not deleting {} {:?}: it is not controlled by this AppWrapper",
                        target.kind, target.name
                    ));
                }
                ObjectState::Found(found) => {
                    if !found.deleting {
                        self.delete(index, target.clone(), false);
                    }
                    remaining.push((index, target));
                }
                ObjectState::Error(_) | ObjectState::NotObserved => {
                    self.delete(index, target.clone(), false);
                    remaining.push((index, target));
                }
            }
        }

        let started = self.ltt(DELETING_RESOURCES).unwrap_or(self.now);
        let deadline = started
            .saturating_add(self.ft.forceful_deletion_grace_period)
            .unwrap_or(Timestamp::MAX);
        let forceful = self.now > deadline;
        if !remaining.is_empty() && !forceful {
            return false;
        }
        if remaining.is_empty() && self.obs.pods.is_empty() {
            self.clear(DELETING_RESOURCES, DELETION_COMPLETE, "");
            return true;
        }
        if forceful {
            if self.obs.pods.is_empty() {
                for (index, target) in remaining {
                    self.delete(index, target, true);
                }
            } else {
                for pod in &self.obs.pods {
                    self.effects.push(Effect::ForceDeletePod {
                        name: pod.name.clone(),
                    });
                }
            }
        }
        false
    }

    fn deleted(&mut self, index: usize) {
        conditions::set(
            &mut self.status.component_status[index].conditions,
            RESOURCES_DEPLOYED,
            CondStatus::False,
            COMPONENT_DELETED,
            "",
            self.now,
        );
    }

    fn delete(&mut self, index: usize, target: ObjectTarget, forceful: bool) {
        self.effects.push(Effect::DeleteComponent {
            index,
            target,
            forceful,
        });
    }

    /// While ResourcesDeployed is True, deletes the components; once they are all gone, sets it
    /// False with `reason` and `message`. Returns whether nothing is deployed any more; when
    /// not, the deletion is still under way and a requeue is set.
    pub(super) fn undeploy(&mut self, reason: &str, message: &str) -> bool {
        if !self.is_true(RESOURCES_DEPLOYED) {
            return true;
        }
        if !self.delete_components() {
            self.requeue(REQUEUE_DELETING);
            return false;
        }
        self.set(RESOURCES_DEPLOYED, CondStatus::False, reason, message);
        true
    }

    /// §2.2.
    pub(super) fn handle_deletion(&mut self, original: &AppWrapperStatus) {
        if !self.obs.has_finalizer {
            return;
        }
        if self.is_true(RESOURCES_DEPLOYED) {
            if !self.delete_components() {
                if original.phase == Phase::Terminating {
                    // The reference sends no patch once the phase is Terminating.
                    self.status = original.clone();
                } else {
                    self.status.phase = Phase::Terminating;
                    self.ignore_status_error = true;
                }
                self.requeue(REQUEUE_DELETING);
                return;
            }
            self.set(
                RESOURCES_DEPLOYED,
                CondStatus::False,
                TERMINATING,
                MSG_TERMINATING_DELETED,
            );
        }
        if self.is_true(QUOTA_RESERVED) {
            self.set(
                QUOTA_RESERVED,
                CondStatus::False,
                TERMINATING,
                MSG_NO_RESOURCES,
            );
        }
        self.effects.push(Effect::RemoveFinalizer);
    }
}
