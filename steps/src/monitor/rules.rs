//! What the invariant monitor checks on each observed AppWrapper state and on each change
//! between two states. Pure functions over [`Snapshot`]s.

use std::collections::BTreeMap;

use appwrapper_controller::api::Phase;
use appwrapper_controller::api::condition::{
    PODS_READY, QUOTA_RESERVED, RESOURCES_DEPLOYED, UNHEALTHY,
};
use serde_json::Value;

use super::graph::{self, Change};

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
        let components = status["componentStatus"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter(|c| c["name"].as_str().is_some_and(|n| !n.is_empty()))
                    .map(|c| (text(&c["apiVersion"]), text(&c["kind"]), text(&c["name"])))
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
            components,
            object: object.clone(),
        })
    }

    pub fn is_true(&self, condition: &str) -> bool {
        self.conditions
            .get(condition)
            .is_some_and(|(s, _, _)| s == "True")
    }

    pub fn is_false(&self, condition: &str) -> bool {
        self.conditions
            .get(condition)
            .is_some_and(|(s, _, _)| s == "False")
    }
}

/// Conditions that must agree with the phase, in every observed state.
pub fn check_state(s: &Snapshot) -> Vec<String> {
    use Phase::*;
    let mut out = Vec::new();
    let qr = s.is_true(QUOTA_RESERVED);
    let rd = s.is_true(RESOURCES_DEPLOYED);
    let mut need = |ok: bool, rule: &str| {
        if !ok {
            out.push(format!("phase {}: {rule}", s.phase));
        }
    };
    // Once deleted, the deletion handler owns the conditions whatever the phase: it only
    // promises to release the quota after the resources (checked below).
    let phase = if s.deleting && s.phase != Terminating {
        Empty
    } else {
        s.phase
    };
    match phase {
        Terminating => need(s.deleting, "Terminating requires a deletion timestamp"),
        Suspended => {
            need(!qr, "QuotaReserved must not be True while Suspended");
            need(!rd, "ResourcesDeployed must not be True while Suspended");
        }
        Resuming | Running => {
            need(qr, "QuotaReserved must be True");
            need(rd, "ResourcesDeployed must be True");
        }
        Resetting | Suspending => need(qr, "QuotaReserved must stay True (quota is held)"),
        Succeeded => need(!qr, "QuotaReserved must be False once Succeeded"),
        Failed => need(
            rd || !qr,
            "QuotaReserved must be released once ResourcesDeployed is False",
        ),
        Empty | Unknown => {}
    }
    if rd && !qr && !matches!(s.phase, Succeeded | Terminating) {
        out.push(format!(
            "phase {}: ResourcesDeployed is True but QuotaReserved is not: quota released before the resources are gone",
            s.phase
        ));
    }
    if s.is_true(PODS_READY) && matches!(phase, Suspended | Resuming) {
        out.push(format!("phase {}: PodsReady must not be True", s.phase));
    }
    if s.is_true(UNHEALTHY) && phase == Suspended {
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
    /// ResourcesDeployed went from True to False: nothing of the workload may remain.
    pub resources_released: bool,
}

pub fn check_change(before: &Snapshot, after: &Snapshot) -> ChangeReport {
    let mut report = ChangeReport::default();
    if after.resetting_count < before.resetting_count {
        report.violations.push(format!(
            "resettingCount decreased from {} to {}",
            before.resetting_count, after.resetting_count
        ));
    }
    if before.phase != after.phase {
        let change = graph::classify(before.phase, after.phase, after.deleting);
        if let Change::Invalid(why) = &change {
            report.violations.push(format!(
                "phase changed from {} to {}, which the phase graph does not allow: {why}",
                before.phase, after.phase
            ));
        }
        report.transition = Some((before.phase, after.phase, change));
    }
    report.resources_released =
        before.is_true(RESOURCES_DEPLOYED) && after.is_false(RESOURCES_DEPLOYED);
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn reads_a_snapshot() {
        let s = snapshot("Running", &[("QuotaReserved", "True")], 2);
        assert_eq!(s.phase, Phase::Running);
        assert_eq!(s.resetting_count, 2);
        assert!(s.is_true("QuotaReserved"));
        assert_eq!(
            s.components,
            vec![("batch/v1".into(), "Job".into(), "j".into())]
        );
        assert!(Snapshot::from_object(&json!({"status": {"phase": "Bogus"}})).is_err());
    }

    #[test]
    fn consistent_states_pass() {
        let qr_rd = [("QuotaReserved", "True"), ("ResourcesDeployed", "True")];
        for s in [
            snapshot("", &[], 0),
            snapshot("Suspended", &[], 0),
            snapshot("Running", &qr_rd, 0),
            snapshot(
                "Resetting",
                &[("QuotaReserved", "True"), ("ResourcesDeployed", "False")],
                1,
            ),
            snapshot(
                "Succeeded",
                &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")],
                0,
            ),
            snapshot("Failed", &qr_rd, 0),
            snapshot(
                "Failed",
                &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")],
                0,
            ),
            deleted(snapshot(
                "Resetting",
                &[("QuotaReserved", "False"), ("ResourcesDeployed", "False")],
                1,
            )),
        ] {
            assert_eq!(check_state(&s), Vec::<String>::new(), "{:?}", s.phase);
        }
    }

    #[test]
    fn inconsistent_states_are_reported() {
        let cases = [
            snapshot("Running", &[("QuotaReserved", "True")], 0),
            snapshot(
                "Suspended",
                &[("ResourcesDeployed", "True"), ("QuotaReserved", "True")],
                0,
            ),
            snapshot(
                "Suspending",
                &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")],
                0,
            ),
            snapshot(
                "Failed",
                &[("QuotaReserved", "True"), ("ResourcesDeployed", "False")],
                0,
            ),
            snapshot(
                "Resuming",
                &[
                    ("QuotaReserved", "True"),
                    ("ResourcesDeployed", "True"),
                    ("PodsReady", "True"),
                ],
                0,
            ),
            snapshot("Terminating", &[], 0),
            deleted(snapshot(
                "Running",
                &[("QuotaReserved", "False"), ("ResourcesDeployed", "True")],
                0,
            )),
        ];
        for s in cases {
            assert!(!check_state(&s).is_empty(), "{:?} passed", s.phase);
        }
    }

    #[test]
    fn changes_report_transitions_releases_and_counter_decreases() {
        let before = snapshot(
            "Running",
            &[("QuotaReserved", "True"), ("ResourcesDeployed", "True")],
            2,
        );
        let after = snapshot(
            "Resetting",
            &[("QuotaReserved", "True"), ("ResourcesDeployed", "False")],
            1,
        );
        let report = check_change(&before, &after);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
        assert!(report.resources_released);
        assert_eq!(
            report.transition,
            Some((Phase::Running, Phase::Resetting, Change::Edge))
        );
        let invalid = check_change(&snapshot("Succeeded", &[], 0), &snapshot("Running", &[], 0));
        assert!(invalid.violations[0].contains("does not allow"));
    }
}
