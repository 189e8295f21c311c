//! createComponents and the component-status protocol (§4.1, §4.6).

use rstest::rstest;

use super::*;

fn with_outcome(s: Scenario, status: (&str, &str), result: CreateResult) -> Scenario {
    s.with(|s| {
        s.status.component_status[0] = job_status(Some(status));
        s.obs.create_outcome = Some(CreateOutcome { index: 0, result });
    })
}

fn initiated(s: Scenario, result: CreateResult) -> Scenario {
    with_outcome(s, ("Unknown", "ComponentCreationInitiated"), result)
}

fn creates(d: &Decision) -> Vec<usize> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CreateComponent { index, .. } => Some(*index),
            _ => None,
        })
        .collect()
}

#[test]
fn first_attempt_records_identity_before_creating() {
    let d = resuming().decide();
    let cs = &d.status.component_status[0];
    assert_eq!(
        (&*cs.name, &*cs.kind, &*cs.api_version),
        ("job", "Job", "batch/v1")
    );
    assert_eq!(
        component_cond(&d, 0),
        Some(("Unknown".into(), "ComponentCreationInitiated".into()))
    );
    assert_eq!(
        d.effects,
        [Effect::CreateComponent {
            index: 0,
            object: desired("job").object
        }]
    );
    assert_eq!((d.requeue_after, d.transition()), (None, None));
}

#[test]
fn generate_name_is_resolved_from_the_create() {
    let d = resuming()
        .with(|s| s.obs.components[0].desired = Some(Ok(desired(""))))
        .decide();
    assert_eq!(d.status.component_status[0].name, "");
    let d = initiated(
        resuming(),
        CreateResult::Created {
            name: "job-x7k2p".into(),
        },
    )
    .with(|s| s.status.component_status[0].name.clear())
    .decide();
    assert_eq!(d.status.component_status[0].name, "job-x7k2p");
    assert_eq!(d.status.phase, Phase::Running);
}

#[rstest]
#[case::controlled_by_this_appwrapper_is_adopted(Some("aw"), Phase::Running)]
#[case::controlled_by_another_is_fatal(Some("other"), Phase::Failed)]
#[case::uncontrolled_is_fatal(None, Phase::Failed)]
fn already_exists(#[case] controller: Option<&str>, #[case] phase: Phase) {
    let d = initiated(
        resuming(),
        CreateResult::AlreadyExists {
            name: "job".into(),
            controller: controller.map(Into::into),
        },
    )
    .decide();
    assert_eq!(d.status.phase, phase);
    if phase == Phase::Failed {
        assert_eq!(
            csm(&d, UNHEALTHY).2,
            "error creating components: resource job exists, but is not controlled by appwrapper"
        );
        assert_eq!(
            component_cond(&d, 0),
            Some(("Unknown".into(), "ComponentCreationInitiated".into()))
        );
        assert_eq!(d.status.resetting_count, 0);
    }
}

#[rstest]
#[case::existing_unreadable(CreateResult::ExistingUnreadable { message: "timeout".into() }, ("Unknown", "ComponentCreationInitiated"))]
#[case::other_error(
    CreateResult::Failed { message: "forbidden".into(), class: CreateErrorClass::Other },
    ("False", "ComponentCreationErrored")
)]
fn retryable_errors_retry_every_second_within_admission_grace(
    #[case] result: CreateResult,
    #[case] component: (&str, &str),
) {
    let d = initiated(resuming().now(59), result).decide();
    assert_eq!(d.requeue_after, Some(secs(1)));
    assert_eq!(d.status.phase, Phase::Resuming);
    assert_eq!(
        component_cond(&d, 0),
        Some((component.0.into(), component.1.into()))
    );
    assert_eq!(csm(&d, UNHEALTHY).0, "False", "nothing else written");
    assert!(creates(&d).is_empty());
}

#[test]
fn retry_after_error_does_not_rerecord_identity() {
    let d = resuming()
        .with(|s| {
            s.status.component_status[0] = job_status(Some(("False", "ComponentCreationErrored")));
            s.obs.components[0].desired = Some(Ok(desired("renamed")));
        })
        .decide();
    assert_eq!(creates(&d), [0]);
    assert_eq!(d.status.component_status[0].name, "job");
    assert_eq!(
        component_cond(&d, 0),
        Some(("False".into(), "ComponentCreationErrored".into()))
    );
}

#[test]
fn retryable_build_failure_within_grace() {
    let d = resuming()
        .with(|s| {
            s.obs.components[0].desired = Some(Err(BuildFailure {
                message: "transient".into(),
                fatal: false,
            }))
        })
        .decide();
    assert_eq!(d.requeue_after, Some(secs(1)));
    assert!(d.status.component_status[0].conditions.is_empty());
}

#[test]
fn retryable_error_past_grace_keeps_resources_deployed_true() {
    let d = initiated(
        resuming().now(60),
        CreateResult::Failed {
            message: "forbidden".into(),
            class: CreateErrorClass::Other,
        },
    )
    .decide();
    assert_eq!(d.status.phase, Phase::Resetting);
    assert_eq!(csm(&d, RESOURCES_DEPLOYED).0, "True");
    assert_eq!(
        csm(&d, UNHEALTHY),
        (
            "True".into(),
            "CreateFailed".into(),
            "error creating components: forbidden".into()
        )
    );
}

fn two_components(s: &mut Scenario) {
    s.status.component_status.push(job_status(None));
    s.obs.component_count = 2;
    s.obs.effective_pod_sets = Ok(vec![job_pod_sets(), job_pod_sets()]);
    s.obs.components.push(ComponentObservation {
        object: ObjectState::NotObserved,
        desired: Some(Ok(desired("job-2"))),
    });
}

#[test]
fn components_are_created_in_order_one_per_decision() {
    let d = initiated(
        resuming().with(two_components),
        CreateResult::Created { name: "job".into() },
    )
    .decide();
    assert_eq!(
        component_cond(&d, 0),
        Some(("True".into(), "ComponentCreatedSuccessfully".into()))
    );
    assert_eq!(d.status.component_status[1].name, "job-2");
    assert_eq!(creates(&d), [1]);
    assert_eq!(d.transition(), None);
}

#[test]
fn created_components_are_skipped() {
    let d = resuming()
        .with(two_components)
        .with(|s| {
            s.status.component_status[0] =
                job_status(Some(("True", "ComponentCreatedSuccessfully")))
        })
        .decide();
    assert_eq!(creates(&d), [1]);
}

#[test]
fn uninitialized_component_status_is_initialized() {
    let d = resuming()
        .with(|s| s.status.component_status.clear())
        .decide();
    assert_eq!(d.status.component_status.len(), 1);
    assert_eq!(creates(&d), [0]);
}

/// Leaving Suspended or Resetting for Resuming creates the first component in the same
/// decision, so that one status write carries both (the finalizer first, the creation mark
/// on a first attempt only, §4.6).
#[rstest]
#[case::unsuspended(suspended(), true, ("Unknown", "ComponentCreationInitiated"))]
#[case::reset_complete(
    resetting().gone().component_deleted().now(90),
    false,
    ("False", "CompononetDeleted")
)]
fn entering_resuming_creates_the_first_component_in_the_same_decision(
    #[case] scenario: Scenario,
    #[case] adds_finalizer: bool,
    #[case] component: (&str, &str),
) {
    let d = scenario.decide();
    assert_eq!(d.error, None);
    assert_eq!(d.status.phase, Phase::Resuming);
    assert_eq!(d.transition(), Some(Phase::Resuming));
    assert_eq!(
        component_cond(&d, 0),
        Some((component.0.into(), component.1.into()))
    );
    assert_eq!(creates(&d), [0]);
    assert_eq!(
        d.effects.first() == Some(&Effect::AddFinalizer),
        adds_finalizer
    );
}

/// The phase graph has no edge from Suspended to Failed: a component that cannot be built
/// fails the workload in the reconcile after the one that resumed it.
#[test]
fn a_component_that_cannot_be_built_is_left_to_the_next_decision() {
    let unbuildable = |s: &mut Scenario| {
        s.obs.components[0].desired = Some(Err(BuildFailure {
            message: "no such kind".into(),
            fatal: true,
        }));
    };
    let d = suspended().with(unbuildable).decide();
    assert_eq!(d.status.phase, Phase::Resuming);
    assert!(creates(&d).is_empty());
    let next = resuming().with(unbuildable).decide();
    assert_eq!(next.status.phase, Phase::Failed);
    assert_eq!(csm(&next, UNHEALTHY).1, "CreateFailed");
}
