//! Fault-tolerance rules (§3): grace periods and their reference timestamps, exit codes, retry
//! counting, GracePeriodMaximum, SuccessTTL, DeletionOnFailureGracePeriod, Autopilot.

use rstest::rstest;

use super::*;
use crate::annotations::*;
use crate::config::AutopilotConfig;
use crate::decide::summary::pod_summary;

const WEEK: i64 = 7 * 24 * 3600;
const DAY: i64 = 24 * 3600;

fn two_pending() -> Vec<PodObservation> {
    vec![pod("p0", PodPhase::Pending), pod("p1", PodPhase::Pending)]
}

fn one_running_one_pending() -> Vec<PodObservation> {
    vec![pod("p0", PodPhase::Running), pod("p1", PodPhase::Pending)]
}

fn failing() -> Scenario {
    running()
        .cond(UNHEALTHY, "True", "FoundFailedPods", 0)
        .now(60)
}

#[rstest]
#[case::admission_grace_from_rd_ltt_within(running().now(59).pods(running_pods(1)), Phase::Running)]
#[case::admission_grace_from_rd_ltt_at_deadline(running().now(60).pods(running_pods(1)), Phase::Resetting)]
#[case::admission_grace_ignores_unhealthy_ltt(
    running().cond(UNHEALTHY, "False", "FoundNoFailedPods", 50).now(60).pods(running_pods(1)),
    Phase::Resetting
)]
#[case::admission_grace_from_latest_deployment(
    running().cond(RESOURCES_DEPLOYED, "True", "Resuming", 100).now(159),
    Phase::Running
)]
#[case::warmup_grace_when_all_pods_exist_within(running().now(299).pods(one_running_one_pending()), Phase::Running)]
#[case::warmup_grace_when_all_pods_exist_at_deadline(running().now(300).pods(one_running_one_pending()), Phase::Resetting)]
#[case::warmup_grace_counts_pending_pods(running().now(60).pods(two_pending()), Phase::Running)]
#[case::warmup_grace_counts_succeeded_pods(running().now(60).pods(vec![pod("p0", PodPhase::Pending), pod("p1", PodPhase::Succeeded)]), Phase::Running)]
#[case::admission_grace_when_pods_are_missing(running().now(60).pods(vec![pod("p0", PodPhase::Pending)]), Phase::Resetting)]
#[case::no_failure_grace_after_admission_expiry(
    running().cond(UNHEALTHY, "True", "InsufficientPodsReady", 60).now(60),
    Phase::Resetting
)]
#[case::failure_grace_from_unhealthy_ltt_within(failing().now(59).pods(vec![failed_pod("p0", 1)]), Phase::Running)]
#[case::failure_grace_from_unhealthy_ltt_at_deadline(failing().pods(vec![failed_pod("p0", 1)]), Phase::Resetting)]
#[case::failure_grace_starts_when_unhealthy_flips(
    running().cond(UNHEALTHY, "False", "Resuming", 0).now(100).pods(vec![failed_pod("p0", 1)]),
    Phase::Running
)]
#[case::failure_grace_measured_from_stale_unhealthy(
    running().cond(UNHEALTHY, "True", "CreateFailed", 0).now(60).pods(vec![failed_pod("p0", 1)]),
    Phase::Resetting
)]
#[case::failed_pods_checked_before_insufficient_pods(
    running().now(1000).pods(vec![failed_pod("p0", 1)]),
    Phase::Running
)]
#[case::retry_pause_from_unhealthy_ltt_not_deletion_end(
    resetting().gone().component_deleted().cond(RESOURCES_DEPLOYED, "False", "Resetting", 80).now(90),
    Phase::Resuming
)]
#[case::retry_pause_not_elapsed(resetting().gone().now(89), Phase::Resetting)]
fn grace_periods_and_reference_timestamps(#[case] scenario: Scenario, #[case] phase: Phase) {
    assert_eq!(scenario.decide().status.phase, phase);
}

#[rstest]
#[case::no_annotations_never_terminal(&[], vec![failed_pod("p0", 42)], Phase::Resetting)]
#[case::terminal_code_listed(&[(TERMINAL_EXIT_CODES, "3,42")], vec![failed_pod("p0", 42)], Phase::Failed)]
#[case::terminal_code_not_listed(&[(TERMINAL_EXIT_CODES, "3,42")], vec![failed_pod("p0", 1)], Phase::Resetting)]
#[case::retryable_code_listed(&[(RETRYABLE_EXIT_CODES, "10,20")], vec![failed_pod("p0", 10)], Phase::Resetting)]
#[case::retryable_code_not_listed(&[(RETRYABLE_EXIT_CODES, "10,20")], vec![failed_pod("p0", 11)], Phase::Failed)]
#[case::any_failed_pod_can_be_terminal(
    &[(TERMINAL_EXIT_CODES, "42")],
    vec![failed_pod("p0", 1), failed_pod("p1", 42)],
    Phase::Failed
)]
#[case::zero_exit_codes_are_ignored(
    &[(RETRYABLE_EXIT_CODES, "10")],
    vec![pod("p0", PodPhase::Failed)],
    Phase::Resetting
)]
#[case::garbage_entries_are_dropped(&[(TERMINAL_EXIT_CODES, "abc,42")], vec![failed_pod("p0", 42)], Phase::Failed)]
fn exit_code_semantics(
    #[case] annotations: &[(&str, &str)],
    #[case] pods: Vec<PodObservation>,
    #[case] phase: Phase,
) {
    let mut scenario = failing().pods(pods);
    for (k, v) in annotations {
        scenario = scenario.annotate(k, v);
    }
    let d = scenario.decide();
    assert_eq!(d.status.phase, phase);
    let expected_count = if phase == Phase::Resetting { 1 } else { 0 };
    assert_eq!(
        d.status.resetting_count, expected_count,
        "terminal failures consume no retry"
    );
}

#[rstest]
#[case::first_failure(0, None, Phase::Resetting, 1)]
#[case::below_limit(2, None, Phase::Resetting, 3)]
#[case::limit_reached(3, None, Phase::Failed, 3)]
#[case::annotation_raises_limit(3, Some("5"), Phase::Resetting, 4)]
#[case::annotation_zero_disables_resets(0, Some("0"), Phase::Failed, 0)]
#[case::annotation_negative_disables_resets(0, Some("-1"), Phase::Failed, 0)]
#[case::malformed_annotation_uses_config(3, Some("many"), Phase::Failed, 3)]
fn retry_counting(
    #[case] count: i32,
    #[case] limit: Option<&str>,
    #[case] phase: Phase,
    #[case] after: i32,
) {
    let mut scenario = running().now(60).count(count);
    if let Some(l) = limit {
        scenario = scenario.annotate(RETRY_LIMIT, l);
    }
    let d = scenario.decide();
    assert_eq!((d.status.phase, d.status.resetting_count), (phase, after));
}

#[test]
fn retry_limit_from_config() {
    let d = running()
        .now(60)
        .with(|s| s.config.appwrapper.fault_tolerance.retry_limit = 0)
        .decide();
    assert_eq!(d.status.phase, Phase::Failed);
}

#[test]
fn malformed_annotations_are_reported_as_warnings() {
    let d = running()
        .pods(running_pods(2))
        .annotate(RETRY_LIMIT, "many")
        .annotate(WARMUP_GRACE_PERIOD, "5 minutes")
        .decide();
    assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
}

#[rstest]
#[case::admission_clamped_within(running().annotate(ADMISSION_GRACE_PERIOD, "48h").now(DAY - 1), Phase::Running)]
#[case::admission_clamped_at_maximum(running().annotate(ADMISSION_GRACE_PERIOD, "48h").now(DAY), Phase::Resetting)]
#[case::admission_negative_is_zero(running().annotate(ADMISSION_GRACE_PERIOD, "-1m").now(0), Phase::Resetting)]
#[case::admission_annotation_shortens(running().annotate(ADMISSION_GRACE_PERIOD, "5s").now(5), Phase::Resetting)]
#[case::warmup_annotation(
    running().annotate(WARMUP_GRACE_PERIOD, "10s").now(10).pods(one_running_one_pending()),
    Phase::Resetting
)]
#[case::failure_grace_clamped(
    failing().annotate(FAILURE_GRACE_PERIOD, "100h").now(DAY).pods(vec![failed_pod("p0", 1)]),
    Phase::Resetting
)]
#[case::failure_grace_annotation_lengthens(
    failing().annotate(FAILURE_GRACE_PERIOD, "2m").now(119).pods(vec![failed_pod("p0", 1)]),
    Phase::Running
)]
#[case::retry_pause_clamped(resetting().gone().annotate(RETRY_PAUSE_PERIOD, "30h").now(DAY), Phase::Resuming)]
#[case::retry_pause_annotation(resetting().gone().annotate(RETRY_PAUSE_PERIOD, "0").now(0), Phase::Resuming)]
#[case::grace_maximum_from_config(
    running().with(|s| s.config.appwrapper.fault_tolerance.grace_period_ceiling = crate::duration::GoDuration::from_secs(30)).now(30),
    Phase::Resetting
)]
fn grace_period_maximum(#[case] scenario: Scenario, #[case] phase: Phase) {
    assert_eq!(scenario.decide().status.phase, phase);
}

#[rstest]
#[case::ttl_from_deployment_not_success_within(succeeded().annotate(SUCCESS_TTL, "10m").now(599), false)]
#[case::ttl_from_deployment_not_success_expired(succeeded().annotate(SUCCESS_TTL, "10m").now(600), true)]
#[case::ttl_not_clamped_by_grace_maximum(succeeded().annotate(SUCCESS_TTL, "48h").now(2 * DAY - 1), false)]
#[case::ttl_at_ceiling_uses_ceiling(succeeded().annotate(SUCCESS_TTL, "168h").now(WEEK - 1), false)]
#[case::ttl_above_ceiling_uses_ceiling(succeeded().annotate(SUCCESS_TTL, "200h").now(WEEK), true)]
#[case::ttl_zero_uses_ceiling(succeeded().annotate(SUCCESS_TTL, "0s").now(WEEK - 1), false)]
#[case::ttl_ceiling_from_config(
    succeeded().with(|s| s.config.appwrapper.fault_tolerance.success_ttl_ceiling = crate::duration::GoDuration::from_secs(30)).now(30),
    true
)]
fn success_ttl(#[case] scenario: Scenario, #[case] deleting: bool) {
    let d = scenario.decide();
    assert_eq!(d.status.phase, Phase::Succeeded);
    assert_eq!(!deletes(&d).is_empty(), deleting);
}

#[test]
fn deletion_on_failure_pauses_then_deletes() {
    let paused = failed().annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m");
    let d = paused.decide();
    assert!(deletes(&d).is_empty(), "resources stay up during the pause");
    assert_eq!(csm(&d, QUOTA_RESERVED).0, "True", "quota stays reserved");
    assert_eq!(ltt(&d, DELETING_RESOURCES), at(10));

    let later = paused
        .clone()
        .with(|s| s.status = d.status.clone())
        .now(130);
    let d = later.decide();
    assert_eq!(deletes(&d), [(0, false)]);
    assert_eq!(csm(&d, DELETING_RESOURCES).1, "DeletionInitiated");
}

#[test]
fn deletion_on_failure_pause_rearms_after_each_delete_pass() {
    let d = failed()
        .annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m")
        .cond(DELETING_RESOURCES, "True", "DeletionInitiated", 100)
        .now(200)
        .decide();
    assert_eq!(csm(&d, DELETING_RESOURCES).1, "DeletionPaused");
    assert_eq!(d.requeue_after, Some(secs(120)));
    assert!(deletes(&d).is_empty());
}

#[test]
fn deletion_on_failure_is_bypassed_by_suspend() {
    let d = failed()
        .annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m")
        .suspend()
        .decide();
    assert_eq!(deletes(&d), [(0, false)]);
}

#[test]
fn deletion_on_failure_is_clamped_by_grace_maximum() {
    let d = failed()
        .annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "48h")
        .decide();
    assert_eq!(d.requeue_after, Some(secs(DAY as u64)));
    assert!(csm(&d, DELETING_RESOURCES).2.ends_with("has value 24h0m0s"));
}

fn autopilot(s: &mut Scenario) {
    s.obs.pods = vec![gpu_pod("p0", "node-a"), gpu_pod("p1", "node-b")];
    s.obs.no_execute_nodes = no_execute("node-a");
}

#[rstest]
#[case::no_execute_resets_without_counting(running().count(2).with(autopilot), Phase::Resetting, 2)]
#[case::monitor_nodes_off(
    running().with(autopilot).with(|s| s.config.appwrapper.autopilot = Some(AutopilotConfig { monitor_nodes: false, ..AutopilotConfig::default() })),
    Phase::Running,
    0
)]
#[case::autopilot_disabled(running().with(autopilot).with(|s| s.config.appwrapper.autopilot = None), Phase::Running, 0)]
#[case::pod_not_using_flagged_resource(
    running().with(autopilot).with(|s| s.obs.pods[0].resources.clear()),
    Phase::Running,
    0
)]
#[case::terminating_running_pod_ignored(
    running().with(autopilot).with(|s| s.obs.pods[0].terminating = true),
    Phase::Running,
    0
)]
#[case::no_execute_limit_zero_fails(running().with(autopilot).annotate(RETRY_LIMIT, "0"), Phase::Failed, 0)]
#[case::failed_pods_take_precedence(
    running().with(autopilot).with(|s| s.obs.pods.push(failed_pod("p2", 1))),
    Phase::Running,
    0
)]
fn autopilot_no_execute(#[case] scenario: Scenario, #[case] phase: Phase, #[case] count: i32) {
    let d = scenario.decide();
    assert_eq!((d.status.phase, d.status.resetting_count), (phase, count));
}

#[test]
fn pod_summary_classification() {
    let (ft, _) = FaultTolerance::resolve(&Default::default(), &Default::default());
    let terminating = |mut p: PodObservation| {
        p.terminating = true;
        p
    };
    let pods = vec![
        pod("pending", PodPhase::Pending),
        terminating(pod("pending-deleted", PodPhase::Pending)),
        pod("running", PodPhase::Running),
        terminating(pod("running-deleted", PodPhase::Running)),
        pod("succeeded", PodPhase::Succeeded),
        failed_pod("failed", 1),
        pod("unknown", PodPhase::Unknown),
    ];
    let s = pod_summary(&pods, &ft, &Default::default(), true);
    assert_eq!((s.pending, s.running, s.succeeded, s.failed), (2, 1, 1, 1));
    assert!(!s.terminal_failure);
}

#[test]
fn expected_pods_default_replicas_and_empty_pod_sets() {
    let no_pod_sets = running().with(|s| {
        s.status.component_status[0].pod_sets.clear();
        s.obs.effective_pod_sets = Ok(vec![vec![]]);
    });
    assert_eq!(
        no_pod_sets.decide().status.phase,
        Phase::Succeeded,
        "0 >= 0 and no pods"
    );
    let default_replicas = running()
        .with(|s| s.status.component_status[0].pod_sets[0].replicas = None)
        .pods(running_pods(1));
    assert_eq!(csm(&default_replicas.decide(), PODS_READY).0, "True");
}

#[test]
fn success_requires_no_running_pending_or_failed_pods() {
    let d = running()
        .pods(vec![
            pod("p0", PodPhase::Succeeded),
            pod("p1", PodPhase::Succeeded),
            pod("p2", PodPhase::Running),
        ])
        .decide();
    assert_eq!(d.status.phase, Phase::Running);
    assert_eq!(csm(&d, PODS_READY).0, "True");
}

#[test]
fn success_keeps_the_deployment_time() {
    let d = running()
        .pods(vec![
            pod("p0", PodPhase::Succeeded),
            pod("p1", PodPhase::Succeeded),
        ])
        .now(500)
        .decide();
    assert_eq!(ltt(&d, RESOURCES_DEPLOYED), at(0));
    assert_eq!(ltt(&d, QUOTA_RESERVED), at(500));
}

#[test]
fn unhealthy_stays_true_through_reset_until_healthy_running() {
    let d = resetting().gone().now(90).decide();
    assert_eq!(d.status.phase, Phase::Resuming);
    assert_eq!(csm(&d, UNHEALTHY).0, "True");
    assert_eq!(csm(&d, QUOTA_RESERVED).0, "True", "quota held during reset");
    assert_eq!(ltt(&d, RESOURCES_DEPLOYED), at(90), "new deployment time");
}

#[test]
fn expected_pods_computed_in_memory_when_status_is_uninitialized() {
    let s = running()
        .with(|s| s.status.component_status.clear())
        .pods(running_pods(2));
    let d = s.decide();
    assert_eq!(csm(&d, PODS_READY).0, "True");
    assert!(
        d.status.component_status.is_empty(),
        "not persisted by Running"
    );
}
