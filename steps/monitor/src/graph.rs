//! The AppWrapper phase graph (spec §2.6) and how an observed phase change relates to it.

use std::collections::{BTreeMap, VecDeque};

use appwrapper_controller::api::Phase;

use Phase::*;

/// Every edge of the phase diagram of the seeds (the reference's documentation), plus
/// Resuming to Resetting (a retryable creation error past the admission grace period) and
/// Terminating. A Resetting AppWrapper is never failed directly: the retry budget is checked
/// where the failure is detected, so Resetting leads only to Resuming, Suspending or
/// Terminating. `Terminating` is entered on deletion only while `ResourcesDeployed` is True
/// (spec §2.2 step 1b), so only from the phases that can hold deployed resources: never from
/// Empty or Suspended.
pub const EDGES: [(Phase, Phase); 19] = [
    (Empty, Suspended),
    (Suspended, Resuming),
    (Resuming, Running),
    (Resuming, Suspending),
    (Resuming, Failed),
    (Resuming, Resetting),
    (Running, Suspending),
    (Running, Succeeded),
    (Running, Failed),
    (Running, Resetting),
    (Resetting, Resuming),
    (Resetting, Suspending),
    (Suspending, Suspended),
    (Resuming, Terminating),
    (Running, Terminating),
    (Resetting, Terminating),
    (Suspending, Terminating),
    (Failed, Terminating),
    (Succeeded, Terminating),
];

pub fn is_edge(from: Phase, to: Phase) -> bool {
    EDGES.contains(&(from, to))
}

/// How an observed change from one phase to another relates to the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// An edge of the graph.
    Edge,
    /// Not an edge, but the watch re-listed between the two states, so the states in between
    /// may have been missed: the change is taken to follow the shortest path (both ends
    /// included).
    Inferred(Vec<Phase>),
    /// Not an edge and not explained by a re-list, or no path at all.
    Invalid(String),
}

/// Classifies an observed phase change. `relisted` is whether the watch re-listed between
/// the two observed states (then intermediate states may have been missed).
pub fn classify(from: Phase, to: Phase, relisted: bool) -> Change {
    if is_edge(from, to) {
        return Change::Edge;
    }
    match shortest_path(from, to) {
        Some(path) if relisted => Change::Inferred(path),
        Some(_) => Change::Invalid(format!(
            "{from} → {to} is not an edge, and the watch did not re-list in between"
        )),
        None => Change::Invalid(format!("no path leads from {from} to {to}")),
    }
}

/// The shortest path of edges from `from` to `to`, both ends included.
pub fn shortest_path(from: Phase, to: Phase) -> Option<Vec<Phase>> {
    let mut previous: BTreeMap<Phase, Phase> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        for &(a, b) in &EDGES {
            if a != at || b == from || previous.contains_key(&b) {
                continue;
            }
            previous.insert(b, a);
            if b == to {
                let mut path = vec![to];
                let mut cursor = to;
                while let Some(&p) = previous.get(&cursor) {
                    path.push(p);
                    if p == from {
                        break;
                    }
                    cursor = p;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(b);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(Empty, Suspended, false, Change::Edge)]
    #[case(Running, Resetting, false, Change::Edge)]
    #[case(Resuming, Failed, false, Change::Edge)]
    #[case(Running, Terminating, false, Change::Edge)]
    #[case(Resetting, Running, true, Change::Inferred(vec![Resetting, Resuming, Running]))]
    #[case(Empty, Running, true, Change::Inferred(vec![Empty, Suspended, Resuming, Running]))]
    #[case(Running, Suspended, true, Change::Inferred(vec![Running, Suspending, Suspended]))]
    #[case(Suspended, Terminating, true, Change::Inferred(vec![Suspended, Resuming, Terminating]))]
    #[case(Resetting, Failed, true, Change::Inferred(vec![Resetting, Resuming, Failed]))]
    fn valid_changes(
        #[case] from: Phase,
        #[case] to: Phase,
        #[case] relisted: bool,
        #[case] expected: Change,
    ) {
        assert_eq!(classify(from, to, relisted), expected);
    }

    /// A phase change that is not an edge is a violation between two ordinary watch events,
    /// even where a path exists.
    #[rstest]
    #[case(Running, Suspended)]
    #[case(Resetting, Failed)]
    #[case(Resetting, Running)]
    #[case(Empty, Running)]
    #[case(Suspended, Terminating)]
    #[case(Empty, Terminating)]
    #[case(Suspended, Running)]
    fn non_edges_without_a_relist_are_invalid(#[case] from: Phase, #[case] to: Phase) {
        let Change::Invalid(why) = classify(from, to, false) else {
            panic!("{from} → {to} accepted");
        };
        assert!(why.contains(&format!("{from} → {to}")), "{why}");
    }

    /// Without a path, even a re-list does not explain the change.
    #[rstest]
    #[case(Succeeded, Running)]
    #[case(Failed, Resetting)]
    #[case(Suspended, Empty)]
    #[case(Terminating, Running)]
    #[case(Failed, Suspended)]
    fn changes_without_a_path_are_invalid(#[case] from: Phase, #[case] to: Phase) {
        for relisted in [false, true] {
            assert!(matches!(classify(from, to, relisted), Change::Invalid(_)));
        }
    }

    #[test]
    fn suspending_can_reach_running_only_through_suspended_and_resuming() {
        assert_eq!(
            shortest_path(Suspending, Running),
            Some(vec![Suspending, Suspended, Resuming, Running])
        );
    }

    #[test]
    fn resetting_never_fails_directly() {
        assert!(!is_edge(Resetting, Failed));
        assert!(!is_edge(Suspended, Terminating));
    }
}
