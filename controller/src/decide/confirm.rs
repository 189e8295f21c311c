//! Which decisions must not rest on the watch caches.
//!
//! A cache lags the API server: it may still show an object that is gone, miss one just made,
//! or hold an AppWrapper older than the controller's own last write. Most decisions only wait
//! or set conditions that the next reconcile corrects, and the status patch is conditional on
//! the resourceVersion read. But a few steps cannot be taken back: concluding that nothing
//! remains (ResourcesDeployed False, the finalizer removed; DEL-NOTHING-LEFT), ending a run (a
//! reset counted, Failed, Succeeded, Suspended), and creating a component, which a cache that
//! still shows an AppWrapper already deleted would create for nobody (the status patch after
//! it fails, and only the garbage collector removes it). Those are decided again on fresh
//! reads.

use super::{Decision, Effect};
use crate::api::condition::RESOURCES_DEPLOYED;
use crate::api::{AppWrapperStatus, Phase};
use crate::conditions;

pub fn needs_fresh_reads(original: &AppWrapperStatus, decision: &Decision) -> bool {
    let new = &decision.status;
    let ends_run = matches!(
        decision.transition(),
        Some(Phase::Resetting | Phase::Failed | Phase::Succeeded | Phase::Suspended)
    );
    let undeployed = deployed(&original.conditions) && !deployed(&new.conditions);
    let component_undeployed = original
        .component_status
        .iter()
        .zip(&new.component_status)
        .any(|(old, new)| deployed(&old.conditions) && !deployed(&new.conditions));
    ends_run
        || undeployed
        || component_undeployed
        || new.resetting_count != original.resetting_count
        || decision
            .effects
            .iter()
            .any(|e| matches!(e, Effect::RemoveFinalizer | Effect::CreateComponent { .. }))
}

fn deployed(conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]) -> bool {
    conditions::is_true(conditions, RESOURCES_DEPLOYED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::AppWrapperComponentStatus;
    use crate::conditions::CondStatus;
    use k8s_openapi::jiff::Timestamp;

    fn status(phase: Phase, deployed: Option<bool>, components: &[bool]) -> AppWrapperStatus {
        let mut s = AppWrapperStatus {
            phase,
            ..AppWrapperStatus::default()
        };
        let set = |conditions: &mut Vec<_>, on: bool| {
            let value = if on {
                CondStatus::True
            } else {
                CondStatus::False
            };
            conditions::set(
                conditions,
                RESOURCES_DEPLOYED,
                value,
                "r",
                "",
                Timestamp::UNIX_EPOCH,
            );
        };
        if let Some(on) = deployed {
            set(&mut s.conditions, on);
        }
        for &on in components {
            let mut c = AppWrapperComponentStatus::default();
            set(&mut c.conditions, on);
            s.component_status.push(c);
        }
        s
    }

    fn decision(status: AppWrapperStatus, effects: Vec<Effect>) -> Decision {
        Decision {
            status,
            effects,
            requeue_after: None,
            error: None,
            ignore_status_error: false,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn only_irreversible_steps_need_fresh_reads() {
        let running = status(Phase::Running, Some(true), &[true, true]);
        let mut reset = running.clone();
        reset.resetting_count = 1;
        let cases = [
            ("nothing changes", running.clone(), vec![], false),
            (
                "an event only",
                running.clone(),
                vec![Effect::Event {
                    reason: "r".into(),
                    action: "a".into(),
                    message: "m".into(),
                }],
                false,
            ),
            (
                "resuming",
                running.clone(),
                vec![Effect::CountPhase(Phase::Resuming)],
                false,
            ),
            (
                "running",
                running.clone(),
                vec![Effect::CountPhase(Phase::Running)],
                false,
            ),
            (
                "a delete",
                running.clone(),
                vec![Effect::DeleteComponent {
                    index: 0,
                    target: crate::decide::ObjectTarget {
                        api_version: "v1".into(),
                        kind: "Pod".into(),
                        name: "p".into(),
                    },
                    forceful: false,
                }],
                false,
            ),
            ("a reset counted", reset, vec![], true),
            (
                "resetting",
                running.clone(),
                vec![Effect::CountPhase(Phase::Resetting)],
                true,
            ),
            (
                "failed",
                running.clone(),
                vec![Effect::CountPhase(Phase::Failed)],
                true,
            ),
            (
                "succeeded",
                running.clone(),
                vec![Effect::CountPhase(Phase::Succeeded)],
                true,
            ),
            (
                "suspended",
                running.clone(),
                vec![Effect::CountPhase(Phase::Suspended)],
                true,
            ),
            (
                "undeployed",
                status(Phase::Running, Some(false), &[true, true]),
                vec![],
                true,
            ),
            (
                "a component gone",
                status(Phase::Running, Some(true), &[true, false]),
                vec![],
                true,
            ),
            (
                "the finalizer removed",
                running.clone(),
                vec![Effect::RemoveFinalizer],
                true,
            ),
            (
                "a component created",
                running.clone(),
                vec![Effect::CreateComponent {
                    index: 0,
                    object: serde_json::json!({"kind": "Pod"}),
                }],
                true,
            ),
        ];
        for (what, new, effects, fresh) in cases {
            assert_eq!(
                needs_fresh_reads(&running, &decision(new, effects)),
                fresh,
                "{what}"
            );
        }
    }
}
