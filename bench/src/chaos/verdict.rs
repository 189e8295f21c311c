//! Whether a chaos run kept its promises. Pure: the run's records in, the problems out.

use serde::Serialize;

use super::schedule::Target;
use super::{Down, Outage};
use crate::plan::{Ending, Plan};
use crate::workload_timeline::{End, Record, SeenReset};

/// The reasons a reset has when Kueue or the API server was down while the attempt was
/// deploying: a wrapped object could not be created past the admission grace period
/// (`CreateFailed`), or its pods could not be created, scheduled or started in time
/// (`InsufficientPodsReady`).
const OUTAGE_REASONS: [&str; 2] = ["CreateFailed", "InsufficientPodsReady"];

/// Watch latency and restart bookkeeping, in seconds, allowed between an outage and an attempt.
const SLACK: f64 = 1.0;

/// What the run left behind, as the verdict needs it.
pub struct Outcome<'a> {
    pub plan: &'a Plan,
    pub records: &'a std::collections::BTreeMap<String, Record>,
    /// The invariant monitor's violations in the run's namespace, rendered.
    pub violations: &'a [String],
    /// States the monitor could not check: a re-list of its watch skipped them.
    pub unchecked: &'a [String],
    /// Labelled pods and wrapped objects left once every AppWrapper was gone.
    pub leftovers: &'a [String],
    /// When the controller and Kueue were down.
    pub outages: &'a [Outage],
    /// Kills or restarts that did not go through.
    pub faults: &'a [String],
}

/// Whether an outage explains `reset`: the reason is one an outage causes and Kueue, the API
/// server or etcd was down at some moment of the attempt that ended in it (the controller's
/// own outages do not: it must not reset a workload for having been away).
fn explained_by_outage(reset: &SeenReset, outages: &[Outage]) -> bool {
    let Some(reason) = &reset.reason else {
        return false;
    };
    let attempt_from = reset.attempt_from.unwrap_or(reset.at) - SLACK;
    OUTAGE_REASONS.contains(&reason.as_str())
        && outages
            .iter()
            .any(|o| !o.what.is_controller() && o.from <= reset.at && o.to >= attempt_from)
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub problems: Vec<String>,
    /// What could not be checked, and why that does not fail the run.
    pub unchecked: Vec<String>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

pub fn judge(outcome: &Outcome) -> Verdict {
    let outage_list = outcome.outages;
    let mut problems = Vec::new();
    for planned in &outcome.plan.workloads {
        let name = &planned.name;
        let Some(record) = outcome.records.get(name) else {
            problems.push(format!("{name}: never observed"));
            continue;
        };
        match (record.end, planned.ending()) {
            (None, _) => problems.push(format!("{name}: neither succeeded, failed nor deleted")),
            (Some(End::Deleted), wanted) if wanted != Ending::Deleted => problems.push(format!(
                "{name}: disappeared before it ended (planned: {wanted:?})"
            )),
            _ => {}
        }
        let (by_outage, others): (Vec<&SeenReset>, Vec<&SeenReset>) = record
            .resets
            .iter()
            .partition(|r| explained_by_outage(r, outage_list));
        if record.max_resets - by_outage.len() as i64 > planned.resets() {
            let others: Vec<String> = others
                .iter()
                .map(|r| {
                    format!(
                        "{:.1} s ({})",
                        r.at,
                        r.reason.as_deref().unwrap_or("no Unhealthy reason")
                    )
                })
                .collect();
            problems.push(format!(
                "{name}: resettingCount reached {}, but the plan explains {} and outages {}; \
                 the other resets: {}",
                record.max_resets,
                planned.resets(),
                by_outage.len(),
                others.join(", ")
            ));
        }
    }
    problems.extend(
        outcome
            .violations
            .iter()
            .map(|v| format!("invariant violated: {v}")),
    );
    // The monitor cannot see what changes while the API server is down; without such an
    // outage a skipped state is a violation like any other.
    let api_down = outage_list
        .iter()
        .any(|o| matches!(o.what, Down::Fault(Target::ApiServer | Target::Etcd)));
    let mut unchecked = Vec::new();
    for u in outcome.unchecked {
        if api_down {
            unchecked.push(u.clone());
        } else {
            problems.push(format!("invariant violated: {u}"));
        }
    }
    problems.extend(
        outcome
            .leftovers
            .iter()
            .map(|l| format!("left behind: {l}")),
    );
    problems.extend(outcome.faults.iter().cloned());
    Verdict {
        problems,
        unchecked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Planned, Shape};
    use rstest::rstest;
    use std::collections::BTreeMap;

    fn plan() -> Plan {
        let w = |name: &str, shape, fails| Planned {
            name: name.into(),
            shape,
            pods: 2,
            fails,
            run_seconds: 1,
        };
        Plan {
            seed: 1,
            workloads: vec![
                w("job", Shape::Job, false),
                w("failing", Shape::Pods, true),
                w("deployment", Shape::Deployment, false),
            ],
        }
    }

    fn record(end: Option<End>, resets: i64) -> Record {
        with_resets(
            end,
            (0..resets)
                .map(|_| reset(1.5, "FoundFailedPods", 1.0))
                .collect(),
        )
    }

    fn with_resets(end: Option<End>, resets: Vec<SeenReset>) -> Record {
        Record {
            created: Some(0.0),
            admitted: Some(0.5),
            running: Some(1.0),
            ended: end.map(|_| 2.0),
            end,
            max_resets: resets.len() as i64,
            resets,
            attempt_from: None,
            watched: true,
        }
    }

    fn reset(at: f64, reason: &str, attempt_from: f64) -> SeenReset {
        SeenReset {
            at,
            reason: Some(reason.into()),
            attempt_from: Some(attempt_from),
        }
    }

    fn good() -> BTreeMap<String, Record> {
        BTreeMap::from([
            ("job".into(), record(Some(End::Succeeded), 0)),
            ("failing".into(), record(Some(End::Failed), 1)),
            ("deployment".into(), record(Some(End::Deleted), 0)),
        ])
    }

    fn verdict(
        records: &BTreeMap<String, Record>,
        violations: &[&str],
        leftovers: &[&str],
    ) -> Verdict {
        with_outages(records, violations, leftovers, &[])
    }

    fn with_outages(
        records: &BTreeMap<String, Record>,
        violations: &[&str],
        leftovers: &[&str],
        outages: &[Outage],
    ) -> Verdict {
        with_unchecked(records, violations, &[], leftovers, outages)
    }

    fn with_unchecked(
        records: &BTreeMap<String, Record>,
        violations: &[&str],
        unchecked: &[&str],
        leftovers: &[&str],
        outages: &[Outage],
    ) -> Verdict {
        let plan = plan();
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        judge(&Outcome {
            plan: &plan,
            records,
            violations: &own(violations),
            unchecked: &own(unchecked),
            leftovers: &own(leftovers),
            outages,
            faults: &[],
        })
    }

    /// What changed while the API server or etcd was down is unchecked, not broken; without
    /// such an outage a skipped state fails the run like a violation.
    #[test]
    fn skipped_states_pass_only_where_the_api_server_was_down() {
        let skipped = ["aw-1: the watch re-listed and missed states"];
        for (outage, passes) in [
            (down(Target::ApiServer, 3.0, 6.0), true),
            (down(Target::Etcd, 3.0, 6.0), true),
            (kueue_down(3.0, 6.0), false),
            (down(Target::Controller, 3.0, 6.0), false),
        ] {
            let v = with_unchecked(&good(), &[], &skipped, &[], &[outage]);
            assert_eq!(v.passed(), passes, "{outage:?}: {v:?}");
            assert_eq!(v.unchecked.len(), usize::from(passes), "{outage:?}");
        }
    }

    fn down(target: Target, from: f64, to: f64) -> Outage {
        Outage {
            what: Down::Fault(target),
            from,
            to,
        }
    }

    fn kueue_down(from: f64, to: f64) -> Outage {
        down(Target::Kueue, from, to)
    }

    /// A reset explained by Kueue, the API server or etcd being down during its attempt:
    /// webhooks refused the wrapped objects or the pods, or nothing could be written.
    #[rstest]
    #[case::create_failed_during_the_outage(
        reset(30.0, "CreateFailed", 5.0),
        kueue_down(8.0, 19.0)
    )]
    #[case::pods_refused_before_the_deadline(
        reset(30.0, "InsufficientPodsReady", 5.0),
        kueue_down(2.0, 5.5)
    )]
    #[case::pods_not_scheduled_while_the_api_server_was_down(
        reset(30.0, "InsufficientPodsReady", 5.0),
        down(Target::ApiServer, 10.0, 14.0)
    )]
    #[case::objects_not_created_while_etcd_was_down(
        reset(30.0, "CreateFailed", 5.0),
        down(Target::Etcd, 10.0, 14.0)
    )]
    #[case::pods_not_scheduled_while_the_scheduler_had_exited(
        reset(30.0, "InsufficientPodsReady", 5.0),
        Outage { what: Down::Exited, from: 12.0, to: 31.0 }
    )]
    fn a_reset_during_an_outage_is_explained(#[case] r: SeenReset, #[case] o: Outage) {
        let mut records = good();
        records.insert(
            "job".into(),
            with_resets(Some(End::Succeeded), vec![r.clone()]),
        );
        records.insert(
            "failing".into(),
            with_resets(
                Some(End::Failed),
                vec![r, reset(60.0, "FoundFailedPods", 40.0)],
            ),
        );
        let v = with_outages(&records, &[], &[], &[o]);
        assert!(v.passed(), "{v:?}");
    }

    #[rstest]
    #[case::a_reason_no_outage_causes(reset(30.0, "FoundFailedPods", 5.0), kueue_down(8.0, 19.0))]
    #[case::only_the_controller_was_down(
        reset(30.0, "CreateFailed", 5.0),
        down(Target::Controller, 8.0, 19.0)
    )]
    #[case::only_the_leader_was_killed(
        reset(30.0, "CreateFailed", 5.0),
        down(Target::Leader, 8.0, 19.0)
    )]
    #[case::only_the_leader_was_paused(
        reset(30.0, "CreateFailed", 5.0),
        down(Target::PausedLeader, 8.0, 19.0)
    )]
    #[case::the_outage_ended_before_the_attempt(
        reset(30.0, "CreateFailed", 5.0),
        kueue_down(1.0, 3.5)
    )]
    #[case::the_outage_began_after_the_reset(
        reset(30.0, "CreateFailed", 5.0),
        kueue_down(31.0, 40.0)
    )]
    fn a_reset_no_outage_explains_fails(#[case] r: SeenReset, #[case] o: Outage) {
        let mut records = good();
        records.insert("job".into(), with_resets(Some(End::Succeeded), vec![r]));
        let v = with_outages(&records, &[], &[], &[o]);
        assert_eq!(v.problems.len(), 1, "{v:?}");
        assert!(
            v.problems[0].starts_with(
                "job: resettingCount reached 1, but the plan explains 0 and outages 0; \
                 the other resets: 30.0 s ("
            ),
            "{v:?}"
        );
    }

    #[test]
    fn everything_ended_as_planned_passes() {
        assert!(verdict(&good(), &[], &[]).passed());
    }

    /// Under chaos an AppWrapper may end otherwise than planned (a success where a failure
    /// was planned is no broken promise) as long as it ends and resets no more than planned.
    #[test]
    fn a_different_terminal_phase_passes() {
        let mut records = good();
        records.insert("failing".into(), record(Some(End::Succeeded), 0));
        records.insert("job".into(), record(Some(End::Failed), 0));
        assert!(verdict(&records, &[], &[]).passed());
    }

    #[rstest]
    #[case("job", record(None, 0), "job: neither succeeded, failed nor deleted")]
    #[case(
        "job",
        record(Some(End::Deleted), 0),
        "job: disappeared before it ended"
    )]
    #[case(
        "job",
        record(Some(End::Succeeded), 1),
        "job: resettingCount reached 1, but the plan explains 0 and outages 0"
    )]
    #[case(
        "failing",
        record(Some(End::Failed), 2),
        "failing: resettingCount reached 2, but the plan explains 1 and outages 0"
    )]
    fn broken_promises_fail(#[case] name: &str, #[case] r: Record, #[case] problem: &str) {
        let mut records = good();
        records.insert(name.into(), r);
        let v = verdict(&records, &[], &[]);
        assert_eq!(v.problems.len(), 1, "{v:?}");
        assert!(v.problems[0].starts_with(problem), "{v:?}");
    }

    #[test]
    fn violations_leftovers_and_missing_records_fail() {
        let mut records = good();
        records.remove("deployment");
        let v = verdict(&records, &["aw-1: bad edge"], &["pod aw-2-pod (Running)"]);
        assert_eq!(
            v.problems,
            vec![
                "deployment: never observed".to_string(),
                "invariant violated: aw-1: bad edge".to_string(),
                "left behind: pod aw-2-pod (Running)".to_string(),
            ]
        );
    }
}
