//! deleteComponents (§4.7), when RD may become False (§4.8), and deletion handling (§2.2).

use rstest::rstest;

use super::*;
use crate::annotations::FORCEFUL_DELETION_GRACE_PERIOD;

fn found_with(controlled: bool, deleting: bool) -> ObjectState {
    ObjectState::Found(FoundObject {
        controlled,
        deleting,
        failed_conditions: 0,
    })
}

/// Suspending with a deletion episode that started at t=0.
fn deleting_since_0() -> Scenario {
    suspending().cond(DELETING_RESOURCES, "True", "DeletionInitiated", 0)
}

#[test]
fn no_finalizer_does_nothing() {
    let s = deleted().with(|s| s.obs.has_finalizer = false);
    let d = s.decide();
    assert_eq!(d.status, s.status);
    assert!(d.effects.is_empty());
    assert_eq!(d.requeue_after, None);
}

#[test]
fn first_pass_deletes_in_background_and_enters_terminating() {
    let d = deleted().decide();
    assert_eq!(d.status.phase, Phase::Terminating);
    assert!(d.ignore_status_error, "patch errors are ignored");
    assert_eq!(deletes(&d), [(0, false)]);
    assert_eq!(csm(&d, DELETING_RESOURCES).1, "DeletionInitiated");
    assert_eq!(ltt(&d, DELETING_RESOURCES), at(10));
    assert_eq!(d.transition(), None, "Terminating is not counted");
}

#[test]
fn already_terminating_sends_no_status_patch() {
    let s = deleted()
        .with(|s| s.status.phase = Phase::Terminating)
        .cond(DELETING_RESOURCES, "True", "DeletionInitiated", 0)
        .object(ObjectState::NotFound)
        .pods(running_pods(1));
    let d = s.decide();
    assert_eq!(d.status, s.status);
    assert_eq!(d.requeue_after, Some(secs(5)));
}

#[test]
fn completion_removes_finalizer_after_clearing_conditions() {
    let d = deleted().gone().decide();
    assert_eq!(
        csm(&d, RESOURCES_DEPLOYED),
        (
            "False".into(),
            "Terminating".into(),
            "Resources successfully deleted".into()
        )
    );
    assert_eq!(
        csm(&d, QUOTA_RESERVED),
        (
            "False".into(),
            "Terminating".into(),
            "No resources deployed".into()
        )
    );
    assert_eq!(csm(&d, DELETING_RESOURCES).1, "DeletionComplete");
    assert_eq!(d.effects.last(), Some(&Effect::RemoveFinalizer));
    assert_eq!(d.transition(), None);
    assert_eq!(d.requeue_after, None);
}

#[test]
fn never_deployed_removes_finalizer_without_deleting() {
    let d = suspended()
        .with(|s| {
            s.obs.deletion_requested = true;
            s.obs.has_finalizer = true;
        })
        .decide();
    assert_eq!(d.effects, [Effect::RemoveFinalizer]);
    assert!(
        d.status.conditions.is_empty(),
        "QuotaReserved only cleared if True"
    );
}

#[test]
fn deletion_takes_precedence_over_any_phase() {
    for phase in [
        Phase::Failed,
        Phase::Succeeded,
        Phase::Resetting,
        Phase::Suspending,
    ] {
        let d = deleted().with(|s| s.status.phase = phase).decide();
        assert_eq!(d.status.phase, Phase::Terminating, "from {phase}");
    }
}

#[test]
fn rd_false_only_after_everything_is_gone() {
    let d = suspending()
        .object(ObjectState::NotFound)
        .pods(running_pods(1))
        .decide();
    assert_eq!(
        csm(&d, RESOURCES_DEPLOYED).0,
        "True",
        "a labelled pod remains"
    );
    assert_eq!(
        component_cond(&d, 0),
        Some(("False".into(), "CompononetDeleted".into()))
    );
    assert!(
        pod_deletes(&d).is_empty(),
        "no forceful deletion before the deadline"
    );
    assert_eq!(d.status.phase, Phase::Suspending);
}

#[test]
fn deletion_start_is_not_moved_by_later_passes() {
    let d = deleting_since_0().now(300).decide();
    assert_eq!(ltt(&d, DELETING_RESOURCES), at(0));
}

#[rstest]
#[case::at_deadline_not_forceful(600, false)]
#[case::strictly_after_deadline_forceful(601, true)]
fn forceful_deadline_from_deleting_resources_ltt(#[case] now: i64, #[case] forceful: bool) {
    let d = deleting_since_0().now(now).pods(running_pods(2)).decide();
    let expected: Vec<String> = if forceful {
        vec!["p0".into(), "p1".into()]
    } else {
        vec![]
    };
    assert_eq!(pod_deletes(&d), expected);
    assert_eq!(
        deletes(&d),
        [(0, false)],
        "components only get a normal delete"
    );
}

#[test]
fn forceful_deletes_components_once_no_pod_is_left() {
    let d = deleting_since_0().now(601).pods(vec![]).decide();
    assert_eq!(deletes(&d), [(0, false), (0, true)]);
    assert!(pod_deletes(&d).is_empty());
    assert_eq!(d.requeue_after, Some(secs(5)));
}

#[test]
fn forceful_deletion_grace_annotation() {
    let d = deleting_since_0()
        .annotate(FORCEFUL_DELETION_GRACE_PERIOD, "1m")
        .now(61)
        .pods(running_pods(1))
        .decide();
    assert_eq!(pod_deletes(&d), ["p0"]);
}

#[test]
fn forceful_pod_deletion_also_when_components_are_gone() {
    let d = deleting_since_0()
        .now(601)
        .object(ObjectState::NotFound)
        .pods(running_pods(1))
        .decide();
    assert_eq!(pod_deletes(&d), ["p0"]);
    assert!(deletes(&d).is_empty());
}

#[rstest]
#[case::not_controlled_is_never_deleted(found_with(false, false), vec![], true)]
#[case::already_deleting_is_not_deleted_again(found_with(true, true), vec![], false)]
#[case::read_error_still_deleted(ObjectState::Error("timeout".into()), vec![(0, false)], false)]
#[case::not_observed_still_deleted(ObjectState::NotObserved, vec![(0, false)], false)]
#[case::not_found_is_gone(ObjectState::NotFound, vec![], true)]
fn component_presence(
    #[case] object: ObjectState,
    #[case] expected_deletes: Vec<(usize, bool)>,
    #[case] complete: bool,
) {
    let d = suspending().object(object).decide();
    assert_eq!(deletes(&d), expected_deletes);
    assert_eq!(d.status.phase == Phase::Suspended, complete);
}

#[test]
fn foreign_object_is_reported() {
    let d = suspending().object(found_with(false, false)).decide();
    assert!(d.warnings.iter().any(|w| w.contains("not controlled")));
}

/// Decided from the status, as in the reference, when the object is not there to be seen.
#[rstest]
#[case::rd_absent(None, true, false)]
#[case::rd_false(Some(("False", "ComponentCreationErrored")), false, false)]
#[case::rd_false_with_name(Some(("False", "CompononetDeleted")), true, false)]
#[case::rd_unknown_without_name(Some(("Unknown", "ComponentCreationInitiated")), false, false)]
#[case::rd_unknown_with_name(Some(("Unknown", "ComponentCreationInitiated")), true, true)]
#[case::rd_true(Some(("True", "ComponentCreatedSuccessfully")), true, true)]
fn which_components_may_exist(
    #[case] rd: Option<(&str, &str)>,
    #[case] named: bool,
    #[case] present: bool,
) {
    let d = suspending()
        .object(ObjectState::NotObserved)
        .with(|s| {
            let mut cs = job_status(rd);
            if !named {
                cs.name.clear();
            }
            s.status.component_status[0] = cs;
        })
        .decide();
    assert_eq!(!deletes(&d).is_empty(), present);
}

/// Deliberately unlike the reference: an object read under the component's name and controlled
/// by this AppWrapper is deleted even when its RD condition says it is gone (a Job recreated on
/// Resuming whose status write lost to the deletion), and the deletion waits for it.
#[rstest]
#[case::controlled(found_with(true, false), true, false)]
#[case::controlled_and_going(found_with(true, true), false, false)]
#[case::not_ours(found_with(false, false), false, true)]
#[case::gone(ObjectState::NotFound, false, true)]
fn an_object_seen_is_deleted_whatever_its_status_says(
    #[case] object: ObjectState,
    #[case] deleted: bool,
    #[case] complete: bool,
) {
    let d = suspending()
        .component_deleted()
        .object(object)
        .pods(vec![])
        .decide();
    assert_eq!(deletes(&d), if deleted { vec![(0, false)] } else { vec![] });
    assert_eq!(d.status.phase == Phase::Suspended, complete);
}

#[test]
fn terminating_pods_still_block_completion() {
    let d = suspending()
        .gone()
        .pods(vec![PodObservation {
            terminating: true,
            ..pod("p0", PodPhase::Running)
        }])
        .decide();
    assert_eq!(d.status.phase, Phase::Suspending);
    assert_eq!(d.requeue_after, Some(secs(5)));
}

#[test]
fn suspending_proceeds_regardless_of_current_suspend() {
    let d = suspending().gone().with(|s| s.obs.suspend = false).decide();
    assert_eq!(d.status.phase, Phase::Suspended);
    assert_eq!(d.status.resetting_count, 0);
}

/// Deliberately unlike the reference: a component whose kind a fresh discovery no longer finds
/// (its CRD removed) cannot exist, so the deletion finishes and an event says why.
#[test]
fn a_component_of_an_unserved_kind_counts_as_deleted() {
    let why = "no matches for kind \"Widget\" in version \"awconf.dev/v1\"";
    let d = deleted().object(ObjectState::Unserved(why.into())).decide();
    assert!(deletes(&d).is_empty(), "no delete of what cannot exist");
    assert_eq!(d.effects.last(), Some(&Effect::RemoveFinalizer));
    let events: Vec<&Effect> = d
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::Event { .. }))
        .collect();
    assert_eq!(events.len(), 1, "{:?}", d.effects);
    let Effect::Event {
        reason, message, ..
    } = events[0]
    else {
        unreachable!()
    };
    assert_eq!(reason, "CompononetDeleted");
    assert!(
        message.contains(why) && message.contains("counts as deleted"),
        "{message}"
    );
}

/// A read that failed for any other reason is no proof: the component is deleted again.
#[test]
fn a_component_that_could_not_be_read_is_deleted_again() {
    let d = deleted()
        .object(ObjectState::Error("connection refused".into()))
        .decide();
    assert_eq!(deletes(&d), [(0, false)]);
    assert!(!d.effects.contains(&Effect::RemoveFinalizer));
}
