//! With `--retries` a failed scenario runs again, and the after hook records every attempt.
//! A scenario is judged by its last attempt; one that passed only on a retry is flaky, never
//! a plain pass, and its earlier failures stay in its record.

pub use crate::record::Attempt;
use crate::record::ScenarioRecord;

impl Attempt {
    fn of(record: ScenarioRecord) -> Attempt {
        Attempt {
            failure: record.failure.unwrap_or_else(|| "failed".into()),
            namespace: record.namespace,
            seconds: record.seconds,
            artifacts: record.artifacts,
            rerun_because: None,
        }
    }
}

/// One record per scenario (by file and line), in the order the scenarios first ran. cucumber
/// starts a retry only after the failed attempt has finished, so a scenario's records come in
/// the order of its attempts.
pub fn merge(records: Vec<ScenarioRecord>) -> Vec<ScenarioRecord> {
    let mut merged: Vec<ScenarioRecord> = Vec::new();
    for record in records {
        match merged
            .iter_mut()
            .find(|m| m.text.key == record.text.key && m.title() == record.title())
        {
            Some(earlier) => {
                let mut attempts = std::mem::take(&mut earlier.earlier);
                let before = std::mem::replace(earlier, record);
                attempts.push(Attempt::of(before));
                earlier.flaky = earlier.passed;
                earlier.earlier = attempts;
            }
            None => merged.push(record),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gherkin::{ScenarioKey, ScenarioText};
    use crate::status::Status;

    fn attempt(line: usize, passed: bool, ns: &str) -> ScenarioRecord {
        ScenarioRecord {
            feature: "F".into(),
            scenario: format!("s{line}"),
            namespace: ns.into(),
            passed,
            failure: (!passed).then(|| format!("boom in {ns}")),
            seconds: 2.0,
            text: ScenarioText {
                key: ScenarioKey {
                    file: "f.feature".into(),
                    line,
                },
                ..ScenarioText::default()
            },
            ..ScenarioRecord::default()
        }
    }

    #[test]
    fn a_scenario_is_judged_by_its_last_attempt() {
        // attempts as (line, passed, namespace) → (status, namespace kept, earlier namespaces)
        type Attempts<'a> = &'a [(usize, bool, &'a str)];
        type Merged<'a> = &'a [(Status, &'a str, &'a [&'a str])];
        let table: &[(Attempts, Merged)] = &[
            (&[(3, true, "a")], &[(Status::Passed, "a", &[])]),
            (&[(3, false, "a")], &[(Status::Failed, "a", &[])]),
            (
                &[(3, false, "a"), (3, true, "b")],
                &[(Status::Flaky, "b", &["a"])],
            ),
            (
                &[(3, false, "a"), (3, false, "b"), (3, false, "c")],
                &[(Status::Failed, "c", &["a", "b"])],
            ),
            (
                &[
                    (3, false, "a"),
                    (9, true, "x"),
                    (3, false, "b"),
                    (3, true, "c"),
                ],
                &[
                    (Status::Flaky, "c", &["a", "b"]),
                    (Status::Passed, "x", &[]),
                ],
            ),
        ];
        for (attempts, want) in table {
            let records = attempts
                .iter()
                .map(|(line, passed, ns)| attempt(*line, *passed, ns))
                .collect();
            let merged = merge(records);
            let got: Vec<(Status, &str, Vec<&str>)> = merged
                .iter()
                .map(|r| {
                    let earlier = r.earlier.iter().map(|a| a.namespace.as_str()).collect();
                    (r.status(), r.namespace.as_str(), earlier)
                })
                .collect();
            let want: Vec<(Status, &str, Vec<&str>)> = want
                .iter()
                .map(|(s, ns, earlier)| (*s, *ns, earlier.to_vec()))
                .collect();
            assert_eq!(got, want, "{attempts:?}");
        }
    }

    #[test]
    fn earlier_failures_keep_their_message() {
        let merged = merge(vec![attempt(3, false, "a"), attempt(3, true, "b")]);
        assert_eq!(merged[0].earlier[0].failure, "boom in a");
        assert_eq!(merged[0].failure, None);
    }
}
