//! Every entry of the condition catalogue (§2.8) and of the event table (§2.9).

use rstest::rstest;

use super::*;
use crate::annotations::{DELETION_ON_FAILURE_GRACE_PERIOD, SUCCESS_TTL};

const WEEK: i64 = 7 * 24 * 3600;

fn outcome(result: CreateResult) -> impl FnOnce(&mut Scenario) {
    move |s| {
        s.status.component_status[0] = job_status(Some(("Unknown", "ComponentCreationInitiated")));
        s.obs.create_outcome = Some(CreateOutcome { index: 0, result });
    }
}

fn fatal_create() -> impl FnOnce(&mut Scenario) {
    outcome(CreateResult::Failed {
        message: "boom".into(),
        class: CreateErrorClass::Invalid,
    })
}

fn component_failed(s: &mut Scenario) {
    s.obs.components[0].object = ObjectState::Found(FoundObject {
        controlled: true,
        deleting: false,
        failed_conditions: 1,
    });
}

fn no_execute_on_node_a(s: &mut Scenario) {
    s.obs.pods = vec![gpu_pod("p0", "node-a"), gpu_pod("p1", "node-a")];
    s.obs.no_execute_nodes = no_execute("node-a");
}

fn all_succeeded() -> Vec<PodObservation> {
    vec![
        pod("p0", PodPhase::Succeeded),
        pod("p1", PodPhase::Succeeded),
    ]
}

const SUCCESS_MSG: &str = "2 pods succeeded and no running, pending, or failed pods";

#[rstest]
#[case::quota_reserved_true_resuming(
    suspended(),
    QUOTA_RESERVED,
    "True",
    "Resuming",
    "Suspend is false"
)]
#[case::quota_reserved_false_succeeded(running().pods(all_succeeded()), QUOTA_RESERVED, "False", "Succeeded", SUCCESS_MSG)]
#[case::quota_reserved_false_suspended(suspending().gone(), QUOTA_RESERVED, "False", "Suspended", "Suspend is true")]
#[case::quota_reserved_false_failed(failed().gone(), QUOTA_RESERVED, "False", "Failed", "No resources deployed")]
#[case::quota_reserved_false_terminating(deleted().gone(), QUOTA_RESERVED, "False", "Terminating", "No resources deployed")]
#[case::resources_deployed_true_resuming(
    suspended(),
    RESOURCES_DEPLOYED,
    "True",
    "Resuming",
    "Suspend is false"
)]
#[case::resources_deployed_true_reset_complete(resetting().gone().now(90), RESOURCES_DEPLOYED, "True", "Resuming", "Reset complete; resuming")]
#[case::resources_deployed_true_succeeded(running().pods(all_succeeded()), RESOURCES_DEPLOYED, "True", "Succeeded", SUCCESS_MSG)]
#[case::resources_deployed_false_suspended(suspending().gone(), RESOURCES_DEPLOYED, "False", "Suspended", "Suspend is true")]
#[case::resources_deployed_false_resetting(resetting().gone(), RESOURCES_DEPLOYED, "False", "Resetting", "Resources deleted for resetting AppWrapper")]
#[case::resources_deployed_false_failed(failed().gone(), RESOURCES_DEPLOYED, "False", "Failed", "Resources deleted for failed AppWrapper")]
#[case::resources_deployed_false_failed_kueue_forced(
    failed().gone().annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m").suspend(),
    RESOURCES_DEPLOYED, "False", "Failed", "Kueue forced resource deletion by suspending AppWrapper"
)]
#[case::resources_deployed_false_failed_suspended_without_pause(
    failed().gone().suspend(),
    RESOURCES_DEPLOYED, "False", "Failed", "Resources deleted for failed AppWrapper"
)]
#[case::resources_deployed_false_failed_after_the_pause(
    failed().gone().annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m").cond(DELETING_RESOURCES, "False", "DeletionPaused", 0).now(120),
    RESOURCES_DEPLOYED, "False", "Failed", "Resources deleted for failed AppWrapper"
)]
#[case::resources_deployed_false_succeeded_default_ttl(
    succeeded().gone().now(WEEK),
    RESOURCES_DEPLOYED, "False", "Succeeded", "Time to live after success of 168h0m0s expired"
)]
#[case::resources_deployed_false_succeeded_annotated_ttl(
    succeeded().gone().annotate(SUCCESS_TTL, "10m").now(600),
    RESOURCES_DEPLOYED, "False", "Succeeded", "Time to live after success of 10m0s expired"
)]
#[case::resources_deployed_false_terminating(deleted().gone(), RESOURCES_DEPLOYED, "False", "Terminating", "Resources successfully deleted")]
#[case::pods_ready_false_resuming(suspended(), PODS_READY, "False", "Resuming", "Suspend is false")]
#[case::pods_ready_true_sufficient(
    running().pods(vec![pod("p0", PodPhase::Running), pod("p1", PodPhase::Succeeded)]),
    PODS_READY, "True", "SufficientPodsReady", "1 pods running; 1 pods succeeded"
)]
#[case::pods_ready_false_insufficient(
    running().cond(PODS_READY, "True", "SufficientPodsReady", 0).pods(vec![pod("p0", PodPhase::Running), pod("p1", PodPhase::Pending)]),
    PODS_READY, "False", "InsufficientPodsReady", "1 pods pending; 1 pods running; 0 pods succeeded"
)]
#[case::pods_ready_false_suspended(
    suspending().gone().cond(PODS_READY, "True", "SufficientPodsReady", 0),
    PODS_READY, "False", "Suspended", ""
)]
#[case::pods_ready_false_resetting(
    resetting().cond(PODS_READY, "True", "SufficientPodsReady", 0),
    PODS_READY, "False", "Resetting", ""
)]
#[case::unhealthy_false_resuming(suspended(), UNHEALTHY, "False", "Resuming", "Suspend is false")]
#[case::unhealthy_true_create_failed(resuming().with(fatal_create()), UNHEALTHY, "True", "CreateFailed", "error creating components: boom")]
#[case::unhealthy_true_missing_component(
    running().object(ObjectState::NotFound),
    UNHEALTHY, "True", "MissingComponent", "Only found 0 deployed components, but was expecting 1"
)]
#[case::unhealthy_true_failed_component(running().with(component_failed), UNHEALTHY, "True", "FailedComponent", "Found 1 failed components")]
#[case::unhealthy_true_found_failed_pods(running().pods(vec![failed_pod("p0", 1)]), UNHEALTHY, "True", "FoundFailedPods", "")]
#[case::unhealthy_true_autopilot_no_execute(
    running().with(no_execute_on_node_a),
    UNHEALTHY, "True", "AutopilotNoExecute", "Workload contains pods using NoExecute resources on Nodes: [node-a]"
)]
#[case::unhealthy_true_insufficient_pods_ready(
    running().now(60).pods(running_pods(1)),
    UNHEALTHY, "True", "InsufficientPodsReady", "0 pods pending; 1 pods running; 0 pods succeeded"
)]
#[case::unhealthy_false_found_no_failed_pods(
    running().cond(UNHEALTHY, "True", "FoundFailedPods", 0).pods(running_pods(2)),
    UNHEALTHY, "False", "FoundNoFailedPods", ""
)]
#[case::unhealthy_false_suspended(
    suspending().gone().cond(UNHEALTHY, "True", "FoundFailedPods", 0),
    UNHEALTHY, "False", "Suspended", ""
)]
#[case::deleting_resources_true_initiated(
    suspending(),
    DELETING_RESOURCES,
    "True",
    "DeletionInitiated",
    ""
)]
#[case::deleting_resources_false_complete(suspending().gone(), DELETING_RESOURCES, "False", "DeletionComplete", "")]
#[case::deleting_resources_false_paused(
    failed().annotate(DELETION_ON_FAILURE_GRACE_PERIOD, "2m"),
    DELETING_RESOURCES, "False", "DeletionPaused",
    "workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration has value 2m0s"
)]
fn appwrapper_condition_catalogue(
    #[case] scenario: Scenario,
    #[case] type_: &str,
    #[case] status: &str,
    #[case] reason: &str,
    #[case] message: &str,
) {
    let d = scenario.decide();
    assert_eq!(d.error, None);
    assert_eq!(
        csm(&d, type_),
        (status.to_owned(), reason.to_owned(), message.to_owned())
    );
}

#[rstest]
#[case::creation_initiated(resuming(), "Unknown", "ComponentCreationInitiated")]
#[case::creation_errored(
    resuming().with(outcome(CreateResult::Failed { message: "forbidden".into(), class: CreateErrorClass::Other })),
    "False", "ComponentCreationErrored"
)]
#[case::created_successfully(resuming().with(outcome(CreateResult::Created { name: "job".into() })), "True", "ComponentCreatedSuccessfully")]
#[case::deleted_misspelled(suspending().gone(), "False", "CompononetDeleted")]
fn component_condition_catalogue(
    #[case] scenario: Scenario,
    #[case] status: &str,
    #[case] reason: &str,
) {
    let d = scenario.decide();
    let c = crate::conditions::find(&d.status.component_status[0].conditions, RESOURCES_DEPLOYED)
        .unwrap();
    assert_eq!((&*c.status, &*c.reason, &*c.message), (status, reason, ""));
}

/// The reference v1.2.2's `Eventf(aw, nil, Normal, reason, action, message)` calls: the detail
/// is the reason and the phase or condition the action (spec §2.9 lists the older form, reason
/// `Unhealthy` and message `<detail>: <message>`).
#[rstest]
#[case::suspending_from_resuming(resuming().suspend(), "ExternallySuspended", "Suspending", "Externally suspended while in the Resuming phase")]
#[case::suspending_from_running(running().suspend(), "ExternallySuspended", "Suspending", "Externally suspended while in the Running phase")]
#[case::suspending_from_resetting(resetting().suspend(), "ExternallySuspended", "Suspending", "Externally suspended while in the Resetting phase")]
#[case::unhealthy_create_failed(resuming().with(fatal_create()), "CreateFailed", "Unhealthy", "error creating components: boom")]
#[case::unhealthy_missing_component(
    running().object(ObjectState::NotFound),
    "MissingComponent", "Unhealthy", "Only found 0 deployed components, but was expecting 1"
)]
#[case::unhealthy_failed_component(running().with(component_failed), "FailedComponent", "Unhealthy", "Found 1 failed components")]
#[case::unhealthy_found_failed_pods(
    running().cond(UNHEALTHY, "True", "FoundFailedPods", 0).now(60).pods(vec![failed_pod("p0", 1), failed_pod("p1", 2)]),
    "FoundFailedPods", "Unhealthy", "2 failed pods"
)]
#[case::unhealthy_autopilot(
    running().with(no_execute_on_node_a),
    "AutopilotNoExecute", "Unhealthy", "Workload contains pods using NoExecute resources on Nodes: [node-a]"
)]
#[case::unhealthy_insufficient_pods_ready(
    running().now(60).pods(running_pods(1)),
    "InsufficientPodsReady", "Unhealthy", "0 pods pending; 1 pods running; 0 pods succeeded"
)]
fn event_table(
    #[case] scenario: Scenario,
    #[case] reason: &str,
    #[case] action: &str,
    #[case] message: &str,
) {
    let d = scenario.decide();
    assert_eq!(
        events(&d),
        [(reason.to_owned(), action.to_owned(), message.to_owned())]
    );
}

#[rstest]
#[case::suspended_to_resuming(suspended())]
#[case::empty_to_suspended(empty())]
#[case::failed_pods_within_grace(running().pods(vec![failed_pod("p0", 1)]))]
#[case::not_ready_within_grace(running().pods(running_pods(1)))]
#[case::ready(running().pods(running_pods(2)))]
#[case::success(running().pods(all_succeeded()))]
#[case::retryable_create_error_within_grace(
    resuming().with(outcome(CreateResult::Failed { message: "forbidden".into(), class: CreateErrorClass::Other }))
)]
#[case::suspending(suspending().gone())]
#[case::deletion(deleted().gone())]
fn no_event(#[case] scenario: Scenario) {
    assert_eq!(events(&scenario.decide()), []);
}

#[test]
fn messages_serialize_even_when_empty() {
    let d = suspending().gone().decide();
    let json = serde_json::to_value(&d.status).unwrap();
    let conditions = json["conditions"].as_array().unwrap();
    assert!(conditions.iter().all(|c| c.get("message").is_some()));
    let component = &json["componentStatus"][0];
    for key in ["name", "kind", "apiVersion", "podSets"] {
        assert!(component.get(key).is_some(), "{key} missing");
    }
}
