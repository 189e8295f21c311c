//! What the invariant monitor checks on each observed AppWrapper state and on each change
//! between two states. Pure functions over [`Snapshot`]s.

use std::collections::BTreeMap;

use appwrapper_controller::api::Phase;
use appwrapper_controller::api::condition::{
    PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY,
};
use serde_json::Value;

use super::graph::{self, Change};
use crate::kube_util;

/// The reason of `QuotaReserved=False` written on Running → Succeeded (spec §2.3.4 step 5):
/// the quota is released while the finished resources stay until the SuccessTTL (§2.3.8).
const QUOTA_RELEASED_ON_SUCCESS: &str = "Succeeded";

/// One observed state of an AppWrapper, as the monitor needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub phase: Phase,
    pub deleting: bool,
    pub resetting_count: i64,
    /// type → (status, reason, lastTransitionTime)
    pub conditions: BTreeMap<String, (String, String, String)>,
    /// (apiVersion, kind, name) of each component that has a name.
    pub components: Vec<(String, String, String)>,
    pub object: Value,
}

impl Snapshot {
    pub fn from_object(object: &Value) -> Result<Snapshot, String> {
        let meta = &object["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let status = &object["status"];
        let phase_text = status["phase"].as_str().unwrap_or_default();
        let phase: Phase = phase_text.parse()?;
        let conditions = status["conditions"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| {
                        (
                            text(&c["type"]),
                            (
                                text(&c["status"]),
                                text(&c["reason"]),
                                text(&c["lastTransitionTime"]),
                            ),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(Snapshot {
            namespace: text(&meta["namespace"]),
            name: text(&meta["name"]),
            uid: text(&meta["uid"]),
            phase,
            deleting: !meta["deletionTimestamp"].is_null(),
            resetting_count: status["resettingCount"].as_i64().unwrap_or(0),
            conditions,
            components: kube_util::components_of(object),
            object: object.clone(),
        })
    }

    pub fn is_true(&self, condition: &str) -> bool {
        self.status_of(condition) == Some("True")
    }

    pub fn is_false(&self, condition: &str) -> bool {
        self.status_of(condition) == Some("False")
    }

    fn status_of(&self, condition: &str) -> Option<&str> {
        self.conditions.get(condition).map(|(s, _, _)| s.as_str())
    }

    pub fn reason_of(&self, condition: &str) -> Option<&str> {
        self.conditions.get(condition).map(|(_, r, _)| r.as_str())
    }

    pub fn transition_time_of(&self, condition: &str) -> Option<&str> {
        self.conditions.get(condition).map(|(_, _, t)| t.as_str())
    }

    /// `QuotaReserved` was released on success, with the finished resources kept.
    fn quota_released_on_success(&self) -> bool {
        self.is_false(QUOTA_RESERVED)
            && self.reason_of(QUOTA_RESERVED) == Some(QUOTA_RELEASED_ON_SUCCESS)
    }
}

/// Conditions that must agree with the phase, in every observed state.
///
/// Once deleted, the deletion handler (spec §2.2) releases `ResourcesDeployed` and
/// `QuotaReserved` whatever the phase, and the phase only ever moves to Terminating: the rules
/// that require a condition to be True are then lifted. The rules that forbid a True condition
/// still hold (deletion never sets one True), and so does the order of the release.
pub fn check_state(s: &Snapshot) -> Vec<String> {
    use Phase::*;
    let mut out = Vec::new();
    let qr = s.is_true(QUOTA_RESERVED);
    let rd = s.is_true(RESOURCES_DEPLOYED);
    let held = !s.deleting;
    let mut need = |ok: bool, rule: &str| {
        if !ok {
            out.push(format!("phase {}: {rule}", s.phase));
        }
    };
    match s.phase {
        Terminating => need(s.deleting, "Terminating requires a deletion timestamp"),
        Suspended => {
            need(!qr, "QuotaReserved must not be True while Suspended");
            need(!rd, "ResourcesDeployed must not be True while Suspended");
        }
        Resuming | Running => {
            need(qr || !held, "QuotaReserved must be True");
            need(rd || !held, "ResourcesDeployed must be True");
        }
        Resetting | Suspending => need(qr || !held, "QuotaReserved must stay True (quota is held)"),
        Succeeded => need(!qr, "QuotaReserved must be False once Succeeded"),
        Failed => need(
            rd || !qr,
            "QuotaReserved must be released once ResourcesDeployed is False",
        ),
        Empty | Unknown => {}
    }
    if rd && !qr && !s.quota_released_on_success() {
        out.push(format!(
            "phase {}: ResourcesDeployed is True but QuotaReserved is not: quota released before the resources are gone",
            s.phase
        ));
    }
    if s.is_true(PODS_READY) && matches!(s.phase, Suspended | Resuming) {
        out.push(format!("phase {}: PodsReady must not be True", s.phase));
    }
    if s.is_true(UNHEALTHY) && s.phase == Suspended {
        out.push(format!("phase {}: Unhealthy must not be True", s.phase));
    }
    out
}

/// What a change from `before` to `after` (same object) tells.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChangeReport {
    pub violations: Vec<String>,
    /// The phase change, if any, and how it relates to the graph.
    pub transition: Option<(Phase, Phase, Change)>,
    /// The conditions that turned False and promise that nothing of the workload remains
    /// (`ResourcesDeployed`, and `QuotaReserved` unless released on success).
    pub released: Vec<&'static str>,
}

/// Checks the change from `before` to `after`; `relisted` is whether the watch re-listed
/// between the two (intermediate states may then have been missed).
pub fn check_change(before: &Snapshot, after: &Snapshot, relisted: bool) -> ChangeReport {
    let mut report = ChangeReport::default();
    let (was, is) = (before.resetting_count, after.resetting_count);
    if is < was {
        report
            .violations
            .push(format!("resettingCount decreased from {was} to {is}"));
    }
    // resetOrFail (spec §2.5) raises the count by one in the patch that enters Resetting.
    let entered_resetting = after.phase == Phase::Resetting && before.phase != Phase::Resetting;
    if !relisted && is > was && (is - was > 1 || !entered_resetting) {
        report.violations.push(format!(
            "resettingCount rose from {was} to {is} on a change from {} to {}: it rises by one, on entering Resetting",
            before.phase, after.phase
        ));
    }
    if before.phase != after.phase {
        let change = graph::classify(before.phase, after.phase, relisted);
        if let Change::Invalid(why) = &change {
            report.violations.push(format!(
                "phase changed from {} to {}, which the phase graph does not allow: {why}",
                before.phase, after.phase
            ));
        }
        report.transition = Some((before.phase, after.phase, change));
    }
    if before.is_true(RESOURCES_DEPLOYED) && after.is_false(RESOURCES_DEPLOYED) {
        report.released.push(RESOURCES_DEPLOYED);
    }
    if before.is_true(QUOTA_RESERVED)
        && after.is_false(QUOTA_RESERVED)
        && !after.quota_released_on_success()
    {
        report.released.push(QUOTA_RESERVED);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const QR_RD: [(&str, &str); 2] = [("QuotaReserved", "True"), ("ResourcesDeployed", "True")];

    fn snapshot(phase: &str, conditions: &[(&str, &str)], count: i64) -> Snapshot {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s, "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"}))
            .collect();
        Snapshot::from_object(&json!({
            "metadata": {"name": "aw", "namespace": "ns", "uid": "u"},
            "status": {"phase": phase, "resettingCount": count, "conditions": conditions,
                "componentStatus": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j"}, {"name": ""}]},
        }))
        .unwrap()
    }

    fn deleted(mut s: Snapshot) -> Snapshot {
        s.deleting = true;
        s
    }

    fn with_reason(mut s: Snapshot, condition: &str, reason: &str) -> Snapshot {
        if let Some(c) = s.conditions.get_mut(condition) {
            c.1 = reason.into();
        }
        s
    }

    /// Quota released on success, the finished resources still deployed.
    fn succeeded(phase: &str) -> Snapshot {
        with_reason(
            snapshot(
                phase,
                &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")],
                0,
            ),
            "QuotaReserved",
            "Succeeded",
        )
    }

    #[test]
    fn reads_a_snapshot() {
        let s = snapshot("Running", &[("QuotaReserved", "True")], 2);
        assert_eq!(s.phase, Phase::Running);
        assert_eq!(s.resetting_count, 2);
        assert!(s.is_true("QuotaReserved"));
        assert_eq!(s.reason_of("QuotaReserved"), Some("R"));
        assert_eq!(
            s.components,
            vec![("batch/v1".into(), "Job".into(), "j".into())]
        );
        assert!(Snapshot::from_object(&json!({"status": {"phase": "Bogus"}})).is_err());
    }

    #[rstest]
    #[case::empty(snapshot("", &[], 0))]
    #[case::suspended(snapshot("Suspended", &[], 0))]
    #[case::running(snapshot("Running", &QR_RD, 0))]
    #[case::resetting(snapshot("Resetting", &[("QuotaReserved", "True"), ("ResourcesDeployed", "False")], 1))]
    #[case::succeeded(succeeded("Succeeded"))]
    #[case::failed_keeping_resources(snapshot("Failed", &QR_RD, 0))]
    #[case::failed_released(snapshot("Failed", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0))]
    #[case::deleted_resetting_released(deleted(snapshot("Resetting", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 1)))]
    #[case::deleted_running_released(deleted(snapshot("Running", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0)))]
    #[case::terminating(deleted(snapshot("Terminating", &QR_RD, 0)))]
    #[case::terminating_released(deleted(snapshot("Terminating", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0)))]
    #[case::terminating_after_success(deleted(succeeded("Terminating")))]
    fn consistent_states_pass(#[case] s: Snapshot) {
        assert_eq!(check_state(&s), Vec::<String>::new());
    }

    /// Each state breaks one rule; the violation names it.
    #[rstest]
    #[case::terminating_not_deleted(snapshot("Terminating", &[], 0), "Terminating requires a deletion timestamp")]
    #[case::suspended_quota(snapshot("Suspended", &[("QuotaReserved", "True")], 0), "QuotaReserved must not be True while Suspended")]
    #[case::suspended_deployed(deleted(snapshot("Suspended", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True")], 0)), "ResourcesDeployed must not be True while Suspended")]
    #[case::resuming_no_quota(snapshot("Resuming", &[("ResourcesDeployed", "True")], 0), "QuotaReserved must be True")]
    #[case::running_not_deployed(snapshot("Running", &[("QuotaReserved", "True")], 0), "ResourcesDeployed must be True")]
    #[case::resetting_no_quota(snapshot("Resetting", &[("QuotaReserved", "False")], 1), "QuotaReserved must stay True")]
    #[case::suspending_no_quota(snapshot("Suspending", &[("QuotaReserved", "False")], 0), "QuotaReserved must stay True")]
    #[case::succeeded_quota(snapshot("Succeeded", &QR_RD, 0), "QuotaReserved must be False once Succeeded")]
    #[case::failed_quota_kept(snapshot("Failed", &[("QuotaReserved", "True"), ("ResourcesDeployed", "False")], 0), "QuotaReserved must be released once ResourcesDeployed is False")]
    #[case::quota_before_resources(snapshot("Suspending", &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")], 0), "quota released before the resources are gone")]
    #[case::quota_before_resources_deleting(deleted(snapshot("Running", &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")], 0)), "quota released before the resources are gone")]
    #[case::quota_before_resources_terminating(deleted(snapshot("Terminating", &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")], 0)), "quota released before the resources are gone")]
    #[case::quota_absent_while_deployed(deleted(snapshot("Terminating", &[("ResourcesDeployed", "True")], 0)), "quota released before the resources are gone")]
    #[case::pods_ready_resuming(snapshot("Resuming", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("PodsReady", "True")], 0), "PodsReady must not be True")]
    #[case::pods_ready_suspended(deleted(snapshot("Suspended", &[("PodsReady", "True")], 0)), "PodsReady must not be True")]
    #[case::unhealthy_suspended(snapshot("Suspended", &[("Unhealthy", "True")], 0), "Unhealthy must not be True")]
    fn inconsistent_states_are_reported(#[case] s: Snapshot, #[case] rule: &str) {
        let found = check_state(&s);
        assert!(found.iter().any(|m| m.contains(rule)), "{rule}: {found:?}");
    }

    fn change(before: &Snapshot, after: &Snapshot) -> ChangeReport {
        check_change(before, after, false)
    }

    #[test]
    fn an_edge_is_a_transition_without_a_violation() {
        let before = snapshot("Running", &QR_RD, 0);
        let after = snapshot(
            "Resetting",
            &[("QuotaReserved", "True"), ("ResourcesDeployed", "True")],
            1,
        );
        let report = change(&before, &after);
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!(
            report.transition,
            Some((Phase::Running, Phase::Resetting, Change::Edge))
        );
        assert!(report.released.is_empty());
    }

    #[test]
    fn a_non_edge_between_ordinary_events_is_a_violation_naming_both_phases() {
        let before = snapshot("Running", &QR_RD, 0);
        let after = snapshot("Suspended", &[], 0);
        let report = change(&before, &after);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert!(report.violations[0].contains("from Running to Suspended"));
        assert!(matches!(
            report.transition,
            Some((_, _, Change::Invalid(_)))
        ));
    }

    #[test]
    fn a_non_edge_across_a_relist_is_inferred() {
        let before = snapshot("Running", &QR_RD, 0);
        let after = snapshot("Suspended", &[], 0);
        let report = check_change(&before, &after, true);
        assert_eq!(report.violations, Vec::<String>::new());
        assert!(matches!(
            report.transition,
            Some((_, _, Change::Inferred(ref path))) if path.len() == 3
        ));
    }

    #[test]
    fn a_decreasing_resetting_count_is_a_violation() {
        let report = change(
            &snapshot("Resetting", &QR_RD, 2),
            &snapshot("Resetting", &QR_RD, 1),
        );
        assert!(
            report.violations[0].contains("resettingCount decreased from 2 to 1"),
            "{:?}",
            report.violations
        );
    }

    #[rstest]
    #[case::without_entering_resetting("Running", "Running", 0, 1)]
    #[case::on_failure("Running", "Failed", 0, 1)]
    #[case::by_two("Running", "Resetting", 0, 2)]
    fn a_resetting_count_that_rises_wrongly_is_a_violation(
        #[case] from: &str,
        #[case] to: &str,
        #[case] was: i64,
        #[case] is: i64,
    ) {
        let report = change(&snapshot(from, &QR_RD, was), &snapshot(to, &QR_RD, is));
        assert!(
            report
                .violations
                .iter()
                .any(|v| v.contains(&format!("resettingCount rose from {was} to {is}"))),
            "{:?}",
            report.violations
        );
    }

    #[rstest]
    #[case::reset("Running", "Resetting", 1)]
    #[case::create_error("Resuming", "Resetting", 1)]
    #[case::autopilot("Running", "Resetting", 0)]
    fn a_resetting_count_rising_by_one_into_resetting_passes(
        #[case] from: &str,
        #[case] to: &str,
        #[case] is: i64,
    ) {
        let report = change(&snapshot(from, &QR_RD, 0), &snapshot(to, &QR_RD, is));
        assert_eq!(report.violations, Vec::<String>::new());
    }

    #[test]
    fn a_resetting_count_may_rise_by_more_across_a_relist() {
        let report = check_change(
            &snapshot("Running", &QR_RD, 0),
            &snapshot("Running", &QR_RD, 2),
            true,
        );
        assert_eq!(report.violations, Vec::<String>::new());
    }

    #[test]
    fn releases_are_reported_for_both_conditions() {
        let deployed = snapshot("Suspending", &QR_RD, 0);
        let released = snapshot(
            "Suspended",
            &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")],
            0,
        );
        assert_eq!(
            change(&deployed, &released).released,
            vec![RESOURCES_DEPLOYED, QUOTA_RESERVED]
        );
        let quota_only = deleted(snapshot(
            "Terminating",
            &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")],
            0,
        ));
        assert_eq!(
            change(&deleted(snapshot("Terminating", &QR_RD, 0)), &quota_only).released,
            vec![QUOTA_RESERVED]
        );
    }

    #[test]
    fn releasing_the_quota_on_success_promises_nothing_about_the_resources() {
        let report = change(&snapshot("Running", &QR_RD, 0), &succeeded("Succeeded"));
        assert_eq!(report.released, Vec::<&str>::new());
        assert_eq!(report.violations, Vec::<String>::new());
    }
}
