//! What the invariant monitor checks on each observed AppWrapper state and on each change
//! between two states. Pure functions over [`Snapshot`]s.

use std::collections::BTreeMap;

use appwrapper_controller::api::condition::{
    PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY,
};
use appwrapper_controller::api::{FINALIZER, Phase};
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::graph::{self, Change};

/// The reason of `QuotaReserved=False` written on Running → Succeeded (spec §2.3.4 step 5):
/// the quota is released while the finished resources stay until the SuccessTTL (§2.3.8).
const QUOTA_RELEASED_ON_SUCCESS: &str = "Succeeded";

/// The conditions whose leaving True promises that nothing of the workload remains.
const RELEASING: [&str; 2] = [RESOURCES_DEPLOYED, QUOTA_RESERVED];

/// A wrapped object, as `status.componentStatus` names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

/// A component, as one state shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    pub object: ComponentRef,
    /// Its `ResourcesDeployed` is True: the controller created the object (or found it already
    /// controlled by this AppWrapper, spec §4.6).
    pub deployed: bool,
}

/// One observed state of an AppWrapper, as the monitor needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// `metadata.creationTimestamp` (whole seconds).
    pub created: Option<DateTime<Utc>>,
    pub finalizers: Vec<String>,
    pub phase: Phase,
    pub deleting: bool,
    pub resetting_count: i64,
    /// type → (status, reason, lastTransitionTime)
    pub conditions: BTreeMap<String, (String, String, String)>,
    /// The components that have a name.
    pub components: Vec<Component>,
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
            resource_version: text(&meta["resourceVersion"]),
            created: meta["creationTimestamp"].as_str().and_then(parse_time),
            finalizers: meta["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(text)
                .collect(),
            phase,
            deleting: !meta["deletionTimestamp"].is_null(),
            resetting_count: status["resettingCount"].as_i64().unwrap_or(0),
            conditions,
            components: components_of(object),
            object: object.clone(),
        })
    }

    pub fn is_true(&self, condition: &str) -> bool {
        self.status_of(condition) == Some("True")
    }

    /// Whether this, the last state of a deleted AppWrapper, shows the API server removing it
    /// past the controller's finalizer: still carrying it, and never marked for deletion. No
    /// controller can bring that about (a finalizer it removes leaves the deletion timestamp
    /// in the last state); a DELETE that read the AppWrapper before the finalizer was added
    /// does, when its write races the one adding it (kubernetes/kubernetes#77988).
    pub fn removed_past_finalizer(&self) -> bool {
        !self.deleting && self.finalizers.iter().any(|f| f == FINALIZER)
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

    /// `QuotaReserved` was released on success, with the finished resources kept: in
    /// Succeeded, and in Terminating, which a succeeded AppWrapper deleted before its TTL
    /// enters with the reason kept (spec §2.2). How Terminating was entered is up to
    /// [`check_change`].
    fn quota_released_on_success(&self) -> bool {
        matches!(self.phase, Phase::Succeeded | Phase::Terminating)
            && self.is_false(QUOTA_RESERVED)
            && self.reason_of(QUOTA_RESERVED) == Some(QUOTA_RELEASED_ON_SUCCESS)
    }

    fn has_finalizer(&self) -> bool {
        self.finalizers.iter().any(|f| f == FINALIZER)
    }

    /// The lastTransitionTime of condition `kind`, if it is True.
    pub fn became_true(&self, kind: &str) -> Option<DateTime<Utc>> {
        let (status, _, since) = self.conditions.get(kind)?;
        (status == "True").then(|| parse_time(since)).flatten()
    }

    /// Nothing changed between the two states (an unknown resourceVersion may hide a change).
    pub fn same_version(&self, other: &Snapshot) -> bool {
        !self.resource_version.is_empty() && self.resource_version == other.resource_version
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn components_of(object: &Value) -> Vec<Component> {
    let deployed = |c: &Value| {
        c["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|k| k["type"] == RESOURCES_DEPLOYED && k["status"] == "True")
    };
    object["status"]["componentStatus"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            let name = c["name"].as_str().filter(|n| !n.is_empty())?;
            Some(Component {
                object: ComponentRef {
                    api_version: c["apiVersion"].as_str()?.to_string(),
                    kind: c["kind"].as_str()?.to_string(),
                    name: name.to_string(),
                },
                deployed: deployed(c),
            })
        })
        .collect()
}

/// Conditions that must agree with the phase, in every observed state.
///
/// Once deleted, the deletion handler (spec §2.2) releases `ResourcesDeployed` and
/// `QuotaReserved` whatever the phase, and the phase only ever moves to Terminating: the rules
/// that require a condition to be True are then lifted. The rules that forbid a True condition
/// still hold (deletion never sets one True), and so does the order of the release, finalizer
/// last (§2.2 steps 1c to 4).
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
        Resetting => {
            need(qr || !held, "QuotaReserved must stay True (quota is held)");
            // Every way into Resetting sets it True, and only a healthy Running clears it (§2.3.6).
            need(
                s.is_true(UNHEALTHY) || !held,
                "Unhealthy must stay True while Resetting",
            );
        }
        Suspending => need(qr || !held, "QuotaReserved must stay True (quota is held)"),
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
    if rd && !s.has_finalizer() {
        out.push(format!(
            "phase {}: ResourcesDeployed is True without the finalizer {FINALIZER}: the AppWrapper may go before its resources",
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
    /// Across a re-list: what shows that states in between were missed (and so not checked).
    /// Each would be a violation between two successive states.
    pub missed: Vec<String>,
    /// The phase change, if any, and how it relates to the graph.
    pub transition: Option<(Phase, Phase, Change)>,
    /// The conditions that left True (turned False, or were removed) and so promise that
    /// nothing of the workload remains (`ResourcesDeployed`, and `QuotaReserved` unless
    /// released on success).
    pub released: Vec<&'static str>,
}

/// Checks the change from `before` to `after`; `relisted` is whether the watch re-listed
/// between the two and the object changed meanwhile (intermediate states may then have been
/// missed). Across a re-list, what holds only from one state to the next is not a violation
/// but evidence of missed states ([`ChangeReport::missed`]).
pub fn check_change(before: &Snapshot, after: &Snapshot, relisted: bool) -> ChangeReport {
    let mut report = ChangeReport::default();
    let mut stepwise = Vec::new();
    let (was, is) = (before.resetting_count, after.resetting_count);
    if is < was {
        report
            .violations
            .push(format!("resettingCount decreased from {was} to {is}"));
    }
    // resetOrFail (spec §2.5) raises the count by one in the patch that enters Resetting.
    let entered_resetting = after.phase == Phase::Resetting && before.phase != Phase::Resetting;
    if is > was && (is - was > 1 || !entered_resetting) {
        stepwise.push(format!(
            "resettingCount rose from {was} to {is} on a change from {} to {}: it rises by one, on entering Resetting",
            before.phase, after.phase
        ));
    }
    if before.phase != after.phase {
        let change = graph::classify(before.phase, after.phase, relisted);
        match &change {
            Change::Invalid(why) => report.violations.push(format!(
                "phase changed from {} to {}, which the phase graph does not allow: {why}",
                before.phase, after.phase
            )),
            Change::Inferred(path) => {
                let path: Vec<String> = path.iter().map(ToString::to_string).collect();
                stepwise.push(format!(
                    "phase changed from {} to {}, which is not an edge: the states in between ({}) were not observed",
                    before.phase,
                    after.phase,
                    path.join(" → ")
                ));
            }
            Change::Edge => {}
        }
        report.transition = Some((before.phase, after.phase, change));
    }
    stepwise.extend(moved_transition_times(before, after));
    if relisted {
        report.missed = stepwise;
    } else {
        report.violations.extend(stepwise);
    }
    // Across a re-list, Terminating may have been reached through an unseen Succeeded.
    let through_success = after.phase == Phase::Succeeded
        || (relisted && graph::shortest_path(before.phase, Phase::Succeeded).is_some());
    let kept_on_success = after.quota_released_on_success() && through_success;
    report.released = RELEASING
        .into_iter()
        .filter(|&c| before.is_true(c) && !after.is_true(c))
        .filter(|&c| !(c == QUOTA_RESERVED && kept_on_success))
        .collect();
    report
}

/// The conditions whose lastTransitionTime moved while their status stayed: it moves only
/// with the status (spec §0.1), and every grace period is measured from it. One reconcile may
/// flip a condition and flip it back in a single write, which moves the time without a
/// visible change; the spec does so in two places only, which pass:
/// - `ResourcesDeployed` stays True across the write that ends a reset: deletion complete
///   (False) and, the retry pause being over, deployed again (True), Resetting → Resuming
///   (§2.3.6 steps 3 and 5);
/// - `DeletingResources` stays False across a deletion pass that began and ended at once, or
///   the deletion-on-failure pause re-armed after a pass (§4.7 steps 1 and 5, §11.1 item 4);
/// - `Unhealthy` stays True across a Running reconcile that clears the one left from a reset
///   and detects anew (§2.3.4 steps 8 and 10, §11.1 item 3).
///
/// A time re-stamped within [`RESTAMP`] of itself also passes: a controller that reconciles a
/// stale copy of the object repeats the write it just made (the reference does, on a loaded
/// machine, when it enters Resuming). It shifts every timer by at most that much, which the
/// timing windows of the scenarios absorb; a controller that re-stamps a running timer moves
/// it by its re-check interval and is caught by them.
fn moved_transition_times(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    before
        .conditions
        .iter()
        .filter_map(|(kind, (status, _, was))| {
            let (now_status, _, is) = after.conditions.get(kind)?;
            (now_status == status
                && !same_time(was, is)
                && !restamped(was, is)
                && !flipped_back_in_one_write(kind, status, before, after))
            .then(|| {
                format!(
                    "{kind}: lastTransitionTime moved from {was} to {is} while its status stayed {status}"
                )
            })
        })
        .collect()
}

fn flipped_back_in_one_write(
    kind: &str,
    status: &str,
    before: &Snapshot,
    after: &Snapshot,
) -> bool {
    match (kind, status) {
        ("ResourcesDeployed", "True") => {
            before.phase == Phase::Resetting && after.phase == Phase::Resuming
        }
        ("DeletingResources", "False") => true,
        ("Unhealthy", "True") => before.phase == Phase::Running,
        _ => false,
    }
}

/// How far a condition's time may be re-stamped by a repeated write (see
/// [`moved_transition_times`]).
const RESTAMP: chrono::TimeDelta = chrono::TimeDelta::seconds(2);

fn restamped(was: &str, is: &str) -> bool {
    match (parse_time(was), parse_time(is)) {
        (Some(was), Some(is)) => (is - was).abs() <= RESTAMP,
        _ => false,
    }
}

fn same_time(a: &str, b: &str) -> bool {
    match (parse_time(a), parse_time(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// What an AppWrapper first seen by a re-list (created while the watch was away) shows of
/// missed states: any phase but Empty was reached unseen.
pub fn missed_creation(first: &Snapshot) -> Option<String> {
    (first.phase != Phase::Empty).then(|| {
        format!(
            "first seen in phase {} by a re-list: its states since its creation were not observed",
            first.phase
        )
    })
}

/// What an AppWrapper that a re-list no longer delivers shows of missed states: if it still
/// held quota or resources when last seen, its release was not observed.
pub fn missed_disappearance(last: &Snapshot) -> Option<String> {
    let held: Vec<&str> = RELEASING.into_iter().filter(|&c| last.is_true(c)).collect();
    (!held.is_empty()).then(|| {
        format!(
            "it disappeared while {} True (phase {}): its release was not observed",
            held.join(" and "),
            last.phase
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const QR_RD: [(&str, &str); 2] = [("QuotaReserved", "True"), ("ResourcesDeployed", "True")];
    const LTT: &str = "2026-01-01T00:00:00Z";

    fn snapshot(phase: &str, conditions: &[(&str, &str)], count: i64) -> Snapshot {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|(t, s)| json!({"type": t, "status": s, "reason": "R", "lastTransitionTime": LTT}))
            .collect();
        Snapshot::from_object(&json!({
            "metadata": {"name": "aw", "namespace": "ns", "uid": "u", "finalizers": [FINALIZER]},
            "status": {"phase": phase, "resettingCount": count, "conditions": conditions,
                "componentStatus": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j"}, {"name": ""}]},
        }))
        .unwrap()
    }

    fn deleted(mut s: Snapshot) -> Snapshot {
        s.deleting = true;
        s
    }

    fn without_finalizer(mut s: Snapshot) -> Snapshot {
        s.finalizers.clear();
        s
    }

    fn with_reason(mut s: Snapshot, condition: &str, reason: &str) -> Snapshot {
        if let Some(c) = s.conditions.get_mut(condition) {
            c.1 = reason.into();
        }
        s
    }

    fn with_time(mut s: Snapshot, condition: &str, time: &str) -> Snapshot {
        if let Some(c) = s.conditions.get_mut(condition) {
            c.2 = time.into();
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

    /// Resetting as the reference has it: quota held, Unhealthy True.
    fn resetting(rd: &str, count: i64) -> Snapshot {
        snapshot(
            "Resetting",
            &[
                ("QuotaReserved", "True"),
                ("ResourcesDeployed", rd),
                ("Unhealthy", "True"),
            ],
            count,
        )
    }

    #[test]
    fn reads_a_snapshot() {
        let s = snapshot("Running", &[("QuotaReserved", "True")], 2);
        assert_eq!(s.phase, Phase::Running);
        assert_eq!(s.resetting_count, 2);
        assert!(s.is_true("QuotaReserved"));
        assert_eq!(s.reason_of("QuotaReserved"), Some("R"));
        assert_eq!(s.finalizers, vec![FINALIZER.to_string()]);
        let job = ComponentRef {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "j".into(),
        };
        assert_eq!(
            s.components,
            vec![Component {
                object: job,
                deployed: false
            }]
        );
        assert!(Snapshot::from_object(&json!({"status": {"phase": "Bogus"}})).is_err());
    }

    #[test]
    fn reads_identity_creation_and_deployed_components() {
        let s = Snapshot::from_object(&json!({
            "metadata": {"name": "aw", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                         "creationTimestamp": LTT},
            "status": {"phase": "Running", "componentStatus": [
                {"apiVersion": "v1", "kind": "Pod", "name": "p", "conditions": [
                    {"type": "ResourcesDeployed", "status": "True"}]},
                {"apiVersion": "v1", "kind": "Pod", "name": "q", "conditions": [
                    {"type": "ResourcesDeployed", "status": "Unknown"}]},
            ]},
        }))
        .unwrap();
        assert_eq!(s.resource_version, "7");
        assert_eq!(s.created, parse_time(LTT));
        assert!(s.finalizers.is_empty());
        let deployed: Vec<(&str, bool)> = s
            .components
            .iter()
            .map(|c| (c.object.name.as_str(), c.deployed))
            .collect();
        assert_eq!(deployed, vec![("p", true), ("q", false)]);
    }

    #[rstest]
    #[case::empty(snapshot("", &[], 0))]
    #[case::suspended(snapshot("Suspended", &[], 0))]
    #[case::running(snapshot("Running", &QR_RD, 0))]
    #[case::resetting(resetting("False", 1))]
    #[case::resetting_deploying(resetting("True", 1))]
    #[case::succeeded(succeeded("Succeeded"))]
    #[case::failed_keeping_resources(snapshot("Failed", &QR_RD, 0))]
    #[case::failed_released(snapshot("Failed", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0))]
    #[case::deleted_resetting_released(deleted(snapshot("Resetting", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 1)))]
    #[case::deleted_running_released(deleted(snapshot("Running", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0)))]
    #[case::terminating(deleted(snapshot("Terminating", &QR_RD, 0)))]
    #[case::terminating_released(deleted(snapshot("Terminating", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0)))]
    #[case::terminating_after_success(deleted(succeeded("Terminating")))]
    #[case::finalizer_gone_after_release(deleted(without_finalizer(snapshot("Terminating", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0))))]
    #[case::no_finalizer_before_admission(without_finalizer(snapshot("Suspended", &[], 0)))]
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
    #[case::resetting_no_quota(snapshot("Resetting", &[("QuotaReserved", "False"), ("Unhealthy", "True")], 1), "QuotaReserved must stay True")]
    #[case::suspending_no_quota(snapshot("Suspending", &[("QuotaReserved", "False")], 0), "QuotaReserved must stay True")]
    #[case::succeeded_quota(snapshot("Succeeded", &QR_RD, 0), "QuotaReserved must be False once Succeeded")]
    #[case::failed_quota_kept(snapshot("Failed", &[("QuotaReserved", "True"), ("ResourcesDeployed", "False")], 0), "QuotaReserved must be released once ResourcesDeployed is False")]
    #[case::quota_before_resources(snapshot("Suspending", &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")], 0), "quota released before the resources are gone")]
    #[case::quota_before_resources_deleting(deleted(snapshot("Running", &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")], 0)), "quota released before the resources are gone")]
    #[case::quota_before_resources_terminating(deleted(snapshot("Terminating", &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")], 0)), "quota released before the resources are gone")]
    #[case::quota_absent_while_deployed(deleted(snapshot("Terminating", &[("ResourcesDeployed", "True")], 0)), "quota released before the resources are gone")]
    #[case::success_reason_when_failed(
        succeeded("Failed"),
        "quota released before the resources are gone"
    )]
    #[case::success_reason_when_suspending(
        succeeded("Suspending"),
        "quota released before the resources are gone"
    )]
    #[case::success_reason_when_resetting(
        succeeded("Resetting"),
        "quota released before the resources are gone"
    )]
    #[case::success_reason_when_running_deleted(
        deleted(succeeded("Running")),
        "quota released before the resources are gone"
    )]
    #[case::deployed_without_finalizer(without_finalizer(snapshot("Running", &QR_RD, 0)), "ResourcesDeployed is True without the finalizer workload.codeflare.dev/finalizer")]
    #[case::deployed_without_finalizer_deleting(deleted(without_finalizer(snapshot("Terminating", &QR_RD, 0))), "ResourcesDeployed is True without the finalizer")]
    #[case::succeeded_without_finalizer(
        without_finalizer(succeeded("Succeeded")),
        "ResourcesDeployed is True without the finalizer"
    )]
    #[case::resetting_healthy(snapshot("Resetting", &[("QuotaReserved", "True"), ("Unhealthy", "False")], 1), "Unhealthy must stay True while Resetting")]
    #[case::resetting_without_unhealthy(snapshot("Resetting", &[("QuotaReserved", "True")], 1), "Unhealthy must stay True while Resetting")]
    #[case::pods_ready_resuming(snapshot("Resuming", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("PodsReady", "True")], 0), "PodsReady must not be True")]
    #[case::pods_ready_suspended(deleted(snapshot("Suspended", &[("PodsReady", "True")], 0)), "PodsReady must not be True")]
    #[case::unhealthy_suspended(snapshot("Suspended", &[("Unhealthy", "True")], 0), "Unhealthy must not be True")]
    fn inconsistent_states_are_reported(#[case] s: Snapshot, #[case] rule: &str) {
        let found = check_state(&s);
        assert!(found.iter().any(|m| m.contains(rule)), "{rule}: {found:?}");
    }

    /// Deletion lifts the rules that require a condition True (§2.2 leaves Unhealthy alone,
    /// but may stop a reset half-way).
    #[test]
    fn a_deleted_resetting_appwrapper_need_not_be_unhealthy() {
        let s = deleted(snapshot("Resetting", &[("QuotaReserved", "True")], 1));
        assert_eq!(check_state(&s), Vec::<String>::new());
    }

    fn change(before: &Snapshot, after: &Snapshot) -> ChangeReport {
        check_change(before, after, false)
    }

    #[test]
    fn an_edge_is_a_transition_without_a_violation() {
        let before = snapshot("Running", &QR_RD, 0);
        let after = resetting("True", 1);
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

    /// Negative: a non-edge across a re-list is inferred, and shows that states were missed.
    #[test]
    fn a_non_edge_across_a_relist_is_inferred_and_missed_states() {
        let before = snapshot("Running", &QR_RD, 0);
        let after = snapshot("Suspended", &[], 0);
        let report = check_change(&before, &after, true);
        assert_eq!(report.violations, Vec::<String>::new());
        assert!(matches!(
            report.transition,
            Some((_, _, Change::Inferred(ref path))) if path.len() == 3
        ));
        assert_eq!(
            report.missed,
            vec![
                "phase changed from Running to Suspended, which is not an edge: the states in between (Running → Suspending → Suspended) were not observed"
            ]
        );
    }

    /// Across a re-list, a change that one step explains misses nothing.
    #[rstest]
    #[case::unchanged(snapshot("Running", &QR_RD, 0), snapshot("Running", &QR_RD, 0))]
    #[case::edge(snapshot("Running", &QR_RD, 0), resetting("True", 1))]
    #[case::status_flip(snapshot("Running", &QR_RD, 0), with_time(snapshot("Running", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("PodsReady", "True")], 0), "PodsReady", "2026-01-01T00:05:00Z"))]
    fn one_step_across_a_relist_misses_nothing(#[case] before: Snapshot, #[case] after: Snapshot) {
        let report = check_change(&before, &after, true);
        assert_eq!(report.missed, Vec::<String>::new());
        assert_eq!(report.violations, Vec::<String>::new());
    }

    #[test]
    fn a_decreasing_resetting_count_is_a_violation() {
        let report = change(&resetting("True", 2), &resetting("True", 1));
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

    /// Negative: the count may rise by more across a re-list, but then resets were missed.
    #[test]
    fn a_resetting_count_rising_by_more_across_a_relist_missed_states() {
        let report = check_change(
            &snapshot("Running", &QR_RD, 0),
            &snapshot("Running", &QR_RD, 2),
            true,
        );
        assert_eq!(report.violations, Vec::<String>::new());
        assert!(
            report.missed[0].contains("resettingCount rose from 0 to 2"),
            "{:?}",
            report.missed
        );
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

    /// Negative: a condition that leaves True by any way (False, removed, Unknown) releases.
    #[rstest]
    #[case::deployed_removed(&QR_RD, &[("QuotaReserved", "True")], vec![RESOURCES_DEPLOYED])]
    #[case::quota_removed(&QR_RD, &[("ResourcesDeployed", "True")], vec![QUOTA_RESERVED])]
    #[case::both_removed(&QR_RD, &[], vec![RESOURCES_DEPLOYED, QUOTA_RESERVED])]
    #[case::deployed_unknown(&QR_RD, &[("QuotaReserved", "True"), ("ResourcesDeployed", "Unknown")], vec![RESOURCES_DEPLOYED])]
    #[case::deployed_false_quota_removed(&QR_RD, &[("ResourcesDeployed", "False")], vec![RESOURCES_DEPLOYED, QUOTA_RESERVED])]
    fn a_condition_leaving_true_is_a_release(
        #[case] before: &[(&str, &str)],
        #[case] after: &[(&str, &str)],
        #[case] released: Vec<&str>,
    ) {
        let before = deleted(snapshot("Terminating", before, 0));
        let after = deleted(snapshot("Terminating", after, 0));
        assert_eq!(change(&before, &after).released, released);
    }

    /// Positive: nothing that was True left True.
    #[rstest]
    #[case::kept(&QR_RD, &QR_RD)]
    #[case::never_true(&[("QuotaReserved", "False")], &[])]
    #[case::absent_to_false(&[], &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")])]
    fn a_condition_not_leaving_true_releases_nothing(
        #[case] before: &[(&str, &str)],
        #[case] after: &[(&str, &str)],
    ) {
        let before = deleted(snapshot("Terminating", before, 0));
        let after = deleted(snapshot("Terminating", after, 0));
        assert_eq!(change(&before, &after).released, Vec::<&str>::new());
    }

    #[test]
    fn releasing_the_quota_on_success_promises_nothing_about_the_resources() {
        let report = change(&snapshot("Running", &QR_RD, 0), &succeeded("Succeeded"));
        assert_eq!(report.released, Vec::<&str>::new());
        assert_eq!(report.violations, Vec::<String>::new());
    }

    /// Positive: the success exemption holds where it belongs, including across a re-list
    /// that skipped Succeeded on the way to Terminating.
    #[rstest]
    #[case::entering_succeeded(snapshot("Running", &QR_RD, 0), succeeded("Succeeded"), false)]
    #[case::deleted_before_the_ttl(deleted(snapshot("Running", &QR_RD, 0)), deleted(succeeded("Terminating")), true)]
    fn the_quota_released_on_success_is_no_release(
        #[case] before: Snapshot,
        #[case] after: Snapshot,
        #[case] relisted: bool,
    ) {
        let report = check_change(&before, &after, relisted);
        assert_eq!(report.released, Vec::<&str>::new());
    }

    /// Negative: reason Succeeded outside the change into Succeeded is an ordinary release.
    #[rstest]
    #[case::into_failed(snapshot("Running", &QR_RD, 0), succeeded("Failed"))]
    #[case::into_suspending(snapshot("Running", &QR_RD, 0), succeeded("Suspending"))]
    #[case::into_resetting(snapshot("Running", &QR_RD, 0), succeeded("Resetting"))]
    #[case::within_running(snapshot("Running", &QR_RD, 0), succeeded("Running"))]
    #[case::into_terminating(deleted(snapshot("Running", &QR_RD, 0)), deleted(succeeded("Terminating")))]
    fn a_success_reason_outside_success_is_a_quota_release(
        #[case] before: Snapshot,
        #[case] after: Snapshot,
    ) {
        assert_eq!(change(&before, &after).released, vec![QUOTA_RESERVED]);
    }

    /// Negative: a failed AppWrapper cannot have passed through Succeeded, re-list or not.
    #[test]
    fn a_success_reason_after_failure_is_a_quota_release_across_a_relist() {
        let before = deleted(snapshot("Failed", &QR_RD, 0));
        let after = deleted(succeeded("Terminating"));
        assert_eq!(
            check_change(&before, &after, true).released,
            vec![QUOTA_RESERVED]
        );
    }

    /// Negative: a condition whose status stayed but whose lastTransitionTime moved.
    #[rstest]
    #[case::quota("QuotaReserved")]
    #[case::deployed("ResourcesDeployed")]
    #[case::unhealthy("Unhealthy")]
    fn a_transition_time_moving_without_a_status_change_is_a_violation(#[case] condition: &str) {
        let conditions = [
            ("QuotaReserved", "True"),
            ("ResourcesDeployed", "True"),
            ("Unhealthy", "True"),
        ];
        // Suspending: Running may clear a stale Unhealthy and detect anew in one write.
        let before = snapshot("Suspending", &conditions, 0);
        let after = with_reason(
            with_time(
                snapshot("Suspending", &conditions, 0),
                condition,
                "2026-01-01T00:00:09Z",
            ),
            condition,
            "Other",
        );
        assert_eq!(
            change(&before, &after).violations,
            vec![format!(
                "{condition}: lastTransitionTime moved from {LTT} to 2026-01-01T00:00:09Z while its status stayed True"
            )]
        );
    }

    /// Positive: the time moves with the status, or not at all, whatever the reason does.
    #[rstest]
    #[case::with_the_status(with_time(snapshot("Running", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("Unhealthy", "True")], 0), "Unhealthy", "2026-01-01T00:00:09Z"))]
    #[case::reason_only(with_reason(snapshot("Running", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("Unhealthy", "False")], 0), "Unhealthy", "FoundFailedPods"))]
    #[case::same_instant_other_spelling(with_time(snapshot("Running", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("Unhealthy", "False")], 0), "Unhealthy", "2026-01-01T00:00:00.000+00:00"))]
    #[case::condition_added(snapshot("Running", &[("QuotaReserved", "True"), ("ResourcesDeployed", "True"), ("Unhealthy", "False"), ("PodsReady", "True")], 0))]
    fn a_transition_time_moving_with_its_status_passes(#[case] after: Snapshot) {
        let before = snapshot(
            "Running",
            &[
                ("QuotaReserved", "True"),
                ("ResourcesDeployed", "True"),
                ("Unhealthy", "False"),
            ],
            0,
        );
        assert_eq!(change(&before, &after).violations, Vec::<String>::new());
    }

    /// Positive: the two flips within one write the spec makes.
    #[test]
    fn a_reset_that_ends_in_one_write_and_a_rearmed_pause_move_the_time_legitimately() {
        let resetting = snapshot("Resetting", &QR_RD, 1);
        let resuming = with_time(
            snapshot("Resuming", &QR_RD, 1),
            "ResourcesDeployed",
            "2026-01-01T00:00:09Z",
        );
        assert_eq!(
            change(&resetting, &resuming).violations,
            Vec::<String>::new()
        );
        let paused = snapshot(
            "Failed",
            &[
                ("QuotaReserved", "True"),
                ("ResourcesDeployed", "True"),
                ("DeletingResources", "False"),
            ],
            0,
        );
        let rearmed = with_time(paused.clone(), "DeletingResources", "2026-01-01T00:00:09Z");
        assert_eq!(change(&paused, &rearmed).violations, Vec::<String>::new());
    }

    /// Positive: a stale write repeated a second later, and a new detection in Running.
    #[test]
    fn a_restamp_within_two_seconds_and_a_new_detection_in_running_pass() {
        let resuming = snapshot("Resuming", &QR_RD, 0);
        let restamped = with_time(resuming.clone(), "QuotaReserved", "2026-01-01T00:00:01Z");
        assert_eq!(
            change(&resuming, &restamped).violations,
            Vec::<String>::new()
        );
        let unhealthy = [
            ("QuotaReserved", "True"),
            ("ResourcesDeployed", "True"),
            ("Unhealthy", "True"),
        ];
        let running = snapshot("Running", &unhealthy, 1);
        let detected = with_time(
            snapshot("Resetting", &unhealthy, 2),
            "Unhealthy",
            "2026-01-01T00:00:45Z",
        );
        assert_eq!(change(&running, &detected).violations, Vec::<String>::new());
        let resetting = snapshot("Resetting", &unhealthy, 1);
        let moved = with_time(resetting.clone(), "Unhealthy", "2026-01-01T00:00:45Z");
        assert_eq!(change(&resetting, &moved).violations.len(), 1);
    }

    /// Negative: outside those writes the same moves are violations.
    #[test]
    fn the_deployment_time_or_a_deletion_start_moving_elsewhere_is_a_violation() {
        let running = snapshot("Running", &QR_RD, 0);
        let redeployed = with_time(
            snapshot("Running", &QR_RD, 0),
            "ResourcesDeployed",
            "2026-01-01T00:00:09Z",
        );
        assert_eq!(change(&running, &redeployed).violations.len(), 1);
        let deleting = snapshot(
            "Suspending",
            &[
                ("QuotaReserved", "True"),
                ("ResourcesDeployed", "True"),
                ("DeletingResources", "True"),
            ],
            0,
        );
        let restarted = with_time(
            deleting.clone(),
            "DeletingResources",
            "2026-01-01T00:00:09Z",
        );
        assert_eq!(change(&deleting, &restarted).violations.len(), 1);
    }

    /// Across a re-list the status may have flipped twice: not a violation, but missed states.
    #[test]
    fn a_transition_time_moving_across_a_relist_missed_states() {
        let before = snapshot("Running", &QR_RD, 0);
        let after = with_time(
            snapshot("Running", &QR_RD, 0),
            "ResourcesDeployed",
            "2026-01-01T00:00:09Z",
        );
        let report = check_change(&before, &after, true);
        assert_eq!(report.violations, Vec::<String>::new());
        assert_eq!(report.missed.len(), 1, "{:?}", report.missed);
        assert!(report.missed[0].starts_with("ResourcesDeployed: lastTransitionTime moved"));
    }

    #[rstest]
    #[case::created(snapshot("", &[], 0), None)]
    #[case::suspended(snapshot("Suspended", &[], 0), Some("first seen in phase Suspended by a re-list: its states since its creation were not observed"))]
    #[case::running(snapshot("Running", &QR_RD, 0), Some("first seen in phase Running by a re-list: its states since its creation were not observed"))]
    fn an_appwrapper_created_during_a_relist_missed_states_past_creation(
        #[case] first: Snapshot,
        #[case] missed: Option<&str>,
    ) {
        assert_eq!(missed_creation(&first).as_deref(), missed);
    }

    #[rstest]
    #[case::deployed(snapshot("Running", &QR_RD, 0), Some("it disappeared while ResourcesDeployed and QuotaReserved True (phase Running): its release was not observed"))]
    #[case::quota_only(snapshot("Resetting", &[("QuotaReserved", "True")], 1), Some("it disappeared while QuotaReserved True (phase Resetting): its release was not observed"))]
    #[case::released(snapshot("Suspended", &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")], 0), None)]
    #[case::never_admitted(snapshot("Suspended", &[], 0), None)]
    fn a_disappearance_across_a_relist_missed_a_release_if_something_was_held(
        #[case] last: Snapshot,
        #[case] missed: Option<&str>,
    ) {
        assert_eq!(missed_disappearance(&last).as_deref(), missed);
    }
}
