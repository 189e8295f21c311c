//! Whether a chaos run kept its promises. Pure: the run's records in, the problems out.

use serde::Serialize;

use crate::plan::{Ending, Plan};
use crate::timeline::{End, Record};

/// What the run left behind, as the verdict needs it.
pub struct Outcome<'a> {
    pub plan: &'a Plan,
    pub records: &'a std::collections::BTreeMap<String, Record>,
    /// The invariant monitor's violations in the run's namespace, rendered.
    pub violations: &'a [String],
    /// Labelled pods and wrapped objects left once every AppWrapper was gone.
    pub leftovers: &'a [String],
    /// Kills or restarts that did not go through.
    pub faults: &'a [String],
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verdict {
    pub problems: Vec<String>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

pub fn judge(outcome: &Outcome) -> Verdict {
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
        if record.max_resets > planned.resets() {
            problems.push(format!(
                "{name}: resettingCount reached {}, but the plan explains {}",
                record.max_resets,
                planned.resets()
            ));
        }
    }
    problems.extend(
        outcome
            .violations
            .iter()
            .map(|v| format!("invariant violated: {v}")),
    );
    problems.extend(
        outcome
            .leftovers
            .iter()
            .map(|l| format!("left behind: {l}")),
    );
    problems.extend(outcome.faults.iter().cloned());
    Verdict { problems }
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
        Record {
            created: Some(0.0),
            admitted: Some(0.5),
            running: Some(1.0),
            ended: end.map(|_| 2.0),
            end,
            max_resets: resets,
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
        let plan = plan();
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        judge(&Outcome {
            plan: &plan,
            records,
            violations: &own(violations),
            leftovers: &own(leftovers),
            faults: &[],
        })
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
        "job: resettingCount reached 1, but the plan explains 0"
    )]
    #[case(
        "failing",
        record(Some(End::Failed), 2),
        "failing: resettingCount reached 2, but the plan explains 1"
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
