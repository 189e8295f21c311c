//! Every row of the requeue table (§2.7).

use rstest::rstest;

use super::*;
use crate::annotations::{DELETION_ON_FAILURE_GRACE_PERIOD, SUCCESS_TTL};

fn retryable_create_error(s: &mut Scenario) {
    s.status.component_status[0] = job_status(Some(("Unknown", "ComponentCreationInitiated")));
    s.obs.create_outcome = Some(CreateOutcome {
        index: 0,
        result: CreateResult::Failed {
            message: "forbidden".into(),
            class: CreateErrorClass::Other,
        },
    });
}

const WEEK: i64 = 7 * 24 * 3600;

#[rstest]
#[case::resuming_retryable_create_error_within_admission_grace(
    resuming().now(59).with(retryable_create_error),
    Some(secs(1))
)]
#[case::running_pods_ready(running().pods(running_pods(2)), Some(secs(60)))]
#[case::running_not_ready_within_admission_grace(running().now(59).pods(running_pods(1)), Some(secs(5)))]
#[case::running_not_ready_within_warmup_grace(
    running().now(299).pods(vec![pod("p0", PodPhase::Running), pod("p1", PodPhase::Pending)]),
    Some(secs(5))
)]
#[case::running_failed_pods_within_failure_grace_first_seen(
    running().now(10).pods(vec![failed_pod("p0", 1)]),
    Some(secs(60))
)]
#[case::running_failed_pods_within_failure_grace_remaining(
    running().cond(UNHEALTHY, "True", "FoundFailedPods", 0).now(45).pods(vec![failed_pod("p0", 1)]),
    Some(secs(15))
)]
#[case::deletion_in_progress_suspending(suspending(), Some(secs(5)))]
#[case::deletion_in_progress_resetting(resetting(), Some(secs(5)))]
#[case::deletion_in_progress_failed(failed(), Some(secs(5)))]
#[case::deletion_in_progress_succeeded(succeeded().now(WEEK), Some(secs(5)))]
#[case::deletion_in_progress_deleted(deleted(), Some(secs(5)))]
#[case::deletion_in_progress_terminating(
    deleted().with(|s| s.status.phase = Phase::Terminating),
    Some(secs(5))
)]
#[case::resetting_retry_pause_not_elapsed(resetting().gone().now(30), Some(secs(60)))]
#[case::failed_deletion_on_failure_pause_not_elapsed_first_pause(
    failed().annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m"),
    Some(secs(120))
)]
#[case::failed_deletion_on_failure_pause_not_elapsed_remaining(
    failed().annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m").cond(DELETING_RESOURCES, "False", "DeletionPaused", 0).now(30),
    Some(secs(90))
)]
#[case::succeeded_ttl_not_elapsed(succeeded().annotate(SUCCESS_TTL, "10m").now(100), Some(secs(500)))]
#[case::succeeded_default_ttl_not_elapsed(succeeded().now(WEEK - 1), Some(secs(1)))]
#[case::everything_else_empty_to_suspended(empty(), None)]
#[case::everything_else_suspended_to_resuming(suspended(), None)]
#[case::everything_else_suspended_with_suspend_true(suspended().suspend(), None)]
#[case::everything_else_resuming_to_running(
    resuming().with(|s| s.status.component_status[0] = job_status(Some(("True", "ComponentCreatedSuccessfully")))),
    None
)]
#[case::everything_else_running_to_succeeded(
    running().pods(vec![pod("p0", PodPhase::Succeeded), pod("p1", PodPhase::Succeeded)]),
    None
)]
#[case::everything_else_running_to_resetting(running().now(60), None)]
#[case::everything_else_running_to_suspending(running().suspend(), None)]
#[case::everything_else_resetting_to_resuming(resetting().gone().now(90), None)]
#[case::everything_else_suspending_to_suspended(suspending().gone(), None)]
#[case::everything_else_failed_done(failed().gone(), None)]
#[case::everything_else_succeeded_done(succeeded().gone().now(WEEK), None)]
#[case::everything_else_deletion_done(deleted().gone(), None)]
fn requeue_table(#[case] scenario: Scenario, #[case] requeue: Option<Duration>) {
    let d = scenario.decide();
    assert_eq!(d.error, None);
    assert_eq!(d.requeue_after, requeue);
}

#[rstest]
#[case::running_component_read_error(running().object(ObjectState::Error("connection refused".into())))]
#[case::running_component_not_observed(running().object(ObjectState::NotObserved))]
#[case::empty_pod_sets_error(empty().with(|s| s.obs.effective_pod_sets = Err("bad".into())))]
#[case::resuming_component_not_built(resuming().with(|s| s.obs.components[0].desired = None))]
fn handler_error_returns_error_without_fixed_delay(#[case] scenario: Scenario) {
    let d = scenario.decide();
    assert!(d.error.is_some());
    assert_eq!(d.requeue_after, None);
    assert_eq!(d.transition(), None);
}

#[test]
fn succeeded_ttl_wait_sends_no_patch() {
    let s = succeeded().annotate(SUCCESS_TTL, "10m").now(100);
    let d = s.decide();
    assert_eq!(d.status, s.status);
    assert!(d.effects.is_empty());
}
