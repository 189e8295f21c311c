//! Every row of the transition table (§2.6).

use rstest::rstest;

use super::*;
use crate::annotations::TERMINAL_EXIT_CODES;

fn created(s: &mut Scenario) {
    s.status.component_status[0] = job_status(Some(("True", "ComponentCreatedSuccessfully")));
}

fn create_outcome(result: CreateResult) -> impl FnOnce(&mut Scenario) {
    move |s| {
        s.status.component_status[0] = job_status(Some(("Unknown", "ComponentCreationInitiated")));
        s.obs.create_outcome = Some(CreateOutcome { index: 0, result });
    }
}

fn failed_with(class: CreateErrorClass) -> CreateResult {
    CreateResult::Failed {
        message: "boom".into(),
        class,
    }
}

fn component_failed(s: &mut Scenario) {
    s.obs.components[0].object = ObjectState::Found(FoundObject {
        controlled: true,
        deleting: false,
        failed_conditions: 1,
    });
}

#[rstest]
#[case::empty_always_to_suspended(empty(), Phase::Suspended, 0)]
#[case::suspended_suspend_false_to_resuming(suspended(), Phase::Resuming, 0)]
#[case::resuming_suspend_true_to_suspending(resuming().suspend(), Phase::Suspending, 0)]
#[case::resuming_all_components_created_to_running(resuming().with(created), Phase::Running, 0)]
#[case::resuming_last_create_succeeded_to_running(
    resuming().with(create_outcome(CreateResult::Created { name: "job".into() })),
    Phase::Running,
    0
)]
#[case::resuming_fatal_create_error_no_match_to_failed(
    resuming().with(create_outcome(failed_with(CreateErrorClass::NoMatch))),
    Phase::Failed,
    0
)]
#[case::resuming_fatal_create_error_invalid_to_failed(
    resuming().with(create_outcome(failed_with(CreateErrorClass::Invalid))),
    Phase::Failed,
    0
)]
#[case::resuming_fatal_build_error_to_failed(
    resuming().with(|s| s.obs.components[0].desired = Some(Err(BuildFailure { message: "bad".into(), fatal: true }))),
    Phase::Failed,
    0
)]
#[case::resuming_retryable_create_error_past_admission_grace_to_resetting(
    resuming().now(60).with(create_outcome(failed_with(CreateErrorClass::Other))),
    Phase::Resetting,
    1
)]
#[case::resuming_retryable_create_error_past_admission_grace_to_failed_when_retries_exhausted(
    resuming().now(60).count(3).with(create_outcome(failed_with(CreateErrorClass::Other))),
    Phase::Failed,
    3
)]
#[case::running_suspend_true_to_suspending(running().suspend(), Phase::Suspending, 0)]
#[case::running_component_missing_to_failed(running().object(ObjectState::NotFound), Phase::Failed, 0)]
#[case::running_component_being_deleted_is_missing_to_failed(
    running().object(ObjectState::Found(FoundObject { deleting: true, controlled: true, failed_conditions: 0 })),
    Phase::Failed,
    0
)]
#[case::running_component_reports_failure_to_resetting(running().with(component_failed), Phase::Resetting, 1)]
#[case::running_component_reports_failure_terminal_exit_code_to_failed(
    running().with(component_failed).annotate(TERMINAL_EXIT_CODES, "42").pods(vec![failed_pod("p0", 42)]),
    Phase::Failed,
    0
)]
#[case::running_component_reports_failure_to_failed_when_retries_exhausted(
    running().with(component_failed).count(3),
    Phase::Failed,
    3
)]
#[case::running_all_pods_succeeded_to_succeeded(
    running().pods(vec![pod("p0", PodPhase::Succeeded), pod("p1", PodPhase::Succeeded)]),
    Phase::Succeeded,
    0
)]
#[case::running_failed_pods_past_failure_grace_to_resetting(
    running().cond(UNHEALTHY, "True", "FoundFailedPods", 0).now(60).pods(vec![failed_pod("p0", 1), pod("p1", PodPhase::Running)]),
    Phase::Resetting,
    1
)]
#[case::running_failed_pods_past_failure_grace_terminal_to_failed(
    running().cond(UNHEALTHY, "True", "FoundFailedPods", 0).now(60).annotate(TERMINAL_EXIT_CODES, "1").pods(vec![failed_pod("p0", 1)]),
    Phase::Failed,
    0
)]
#[case::running_failed_pods_past_failure_grace_to_failed_when_retries_exhausted(
    running().cond(UNHEALTHY, "True", "FoundFailedPods", 0).now(60).count(3).pods(vec![failed_pod("p0", 1)]),
    Phase::Failed,
    3
)]
#[case::running_autopilot_no_execute_to_resetting_without_counting(
    running().count(1).pods(vec![gpu_pod("p0", "node-a"), gpu_pod("p1", "node-b")]).with(|s| s.obs.no_execute_nodes = no_execute("node-a")),
    Phase::Resetting,
    1
)]
#[case::running_autopilot_no_execute_to_failed_when_retries_exhausted(
    running().count(3).pods(running_pods(1).into_iter().chain([gpu_pod("p1", "node-a")]).collect()).with(|s| s.obs.no_execute_nodes = no_execute("node-a")),
    Phase::Failed,
    3
)]
#[case::running_not_enough_pods_past_admission_grace_to_resetting(
    running().now(60).pods(running_pods(1)),
    Phase::Resetting,
    1
)]
#[case::running_not_enough_pods_past_warmup_grace_to_resetting(
    running().now(300).pods(vec![pod("p0", PodPhase::Running), pod("p1", PodPhase::Pending)]),
    Phase::Resetting,
    1
)]
#[case::running_not_enough_pods_past_grace_to_failed_when_retries_exhausted(
    running().now(60).count(3),
    Phase::Failed,
    3
)]
#[case::resetting_suspend_true_to_suspending(resetting().suspend(), Phase::Suspending, 0)]
#[case::resetting_resources_gone_and_retry_pause_elapsed_to_resuming(
    resetting().gone().now(90),
    Phase::Resuming,
    0
)]
#[case::suspending_resources_gone_to_suspended(suspending().gone(), Phase::Suspended, 0)]
#[case::any_deleted_with_finalizer_resources_still_being_deleted_to_terminating(
    deleted(),
    Phase::Terminating,
    0
)]
fn transition_table(#[case] scenario: Scenario, #[case] to: Phase, #[case] resetting_count: i32) {
    let d = scenario.decide();
    assert_eq!(d.error, None);
    assert_eq!(d.status.phase, to);
    assert_eq!(d.status.resetting_count, resetting_count);
    let counted = (to != Phase::Terminating).then_some(to);
    assert_eq!(d.transition(), counted, "phase metric");
}

#[test]
fn suspended_to_resuming_adds_the_finalizer_first() {
    let d = suspended().decide();
    assert_eq!(d.effects.first(), Some(&Effect::AddFinalizer));
    let d = suspended().with(|s| s.obs.has_finalizer = true).decide();
    assert!(!d.effects.contains(&Effect::AddFinalizer));
}

#[test]
fn empty_initializes_component_status_from_effective_pod_sets() {
    let d = empty().decide();
    assert_eq!(d.status.component_status, vec![job_status(None)]);
    assert!(d.status.conditions.is_empty(), "no conditions are set");
    assert!(
        !d.effects.contains(&Effect::AddFinalizer),
        "no finalizer in Empty"
    );
}

#[test]
fn empty_with_pod_set_error_returns_the_error() {
    let d = empty()
        .with(|s| s.obs.effective_pod_sets = Err("bad path".into()))
        .decide();
    assert_eq!(d.error.as_deref(), Some("bad path"));
    assert_eq!(d.status.phase, Phase::Empty);
    assert_eq!(d.transition(), None);
}

/// §5.7 builds one entry per component: PodSets for fewer components than `spec.components`
/// hold are an error, never a short componentStatus.
#[test]
fn empty_with_pod_sets_for_too_few_components_returns_an_error() {
    let d = empty().with(|s| s.obs.component_count = 2).decide();
    assert_eq!(
        d.error.as_deref(),
        Some("computed PodSets for 1 components, expected 2")
    );
    assert_eq!(d.status.phase, Phase::Empty);
    assert!(d.status.component_status.is_empty());
    assert_eq!(d.transition(), None);
}

#[rstest]
#[case::suspended_with_suspend_true(suspended().suspend())]
#[case::terminating_without_deletion(running().with(|s| s.status.phase = Phase::Terminating))]
#[case::unknown_phase(running().with(|s| s.status.phase = Phase::Unknown))]
#[case::failed_done(failed().gone().cond(RESOURCES_DEPLOYED, "False", "Failed", 5).cond(QUOTA_RESERVED, "False", "Failed", 5).msg(QUOTA_RESERVED, "No resources deployed"))]
#[case::succeeded_done(succeeded().cond(RESOURCES_DEPLOYED, "False", "Succeeded", 5))]
fn phases_that_do_nothing(#[case] scenario: Scenario) {
    let d = scenario.decide();
    assert_eq!(d.status, scenario.status);
    assert!(d.effects.is_empty(), "{:?}", d.effects);
    assert_eq!((d.requeue_after, d.error), (None, None));
}

#[rstest]
#[case::empty(empty())]
#[case::suspended(suspended())]
#[case::running(running().suspend())]
#[case::deleted(deleted())]
fn managed_by_another_controller_is_ignored(#[case] scenario: Scenario) {
    let d = scenario
        .clone()
        .with(|s| s.obs.managed_by = Some("kueue.x-k8s.io/multikueue".into()))
        .decide();
    assert_eq!(d.status, scenario.status);
    assert!(d.effects.is_empty());
    assert_eq!((d.requeue_after, d.error), (None, None));
}

#[test]
fn managed_by_this_controller_is_reconciled() {
    let d = suspended()
        .with(|s| s.obs.managed_by = Some(crate::api::CONTROLLER_NAME.into()))
        .decide();
    assert_eq!(d.status.phase, Phase::Resuming);
}

#[test]
fn terminal_phases_are_never_left() {
    for scenario in [failed().gone(), succeeded().gone().now(1_000_000_000)] {
        let from = scenario.status.phase;
        let d = scenario.decide();
        assert_eq!(d.status.phase, from);
        let d = scenario.clone().with(|s| s.obs.suspend = false).decide();
        assert_eq!(d.status.phase, from);
    }
}

/// Enough pods succeeded, but others are still pending, running or failed: not a success
/// (§2.3.4 step 5 counts every other pod, not their difference).
#[rstest]
#[case::pending_and_running(vec![
    pod("p0", PodPhase::Succeeded), pod("p1", PodPhase::Succeeded),
    pod("p2", PodPhase::Pending), pod("p3", PodPhase::Running),
])]
#[case::running_and_failed(vec![
    pod("p0", PodPhase::Succeeded), pod("p1", PodPhase::Succeeded),
    pod("p2", PodPhase::Running), failed_pod("p3", 1),
])]
fn enough_succeeded_pods_beside_others_are_not_a_success(#[case] pods: Vec<PodObservation>) {
    let d = running().pods(pods).decide();
    assert_eq!(d.error, None);
    assert_ne!(d.status.phase, Phase::Succeeded);
}
