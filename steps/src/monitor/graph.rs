//! The AppWrapper phase graph (spec §2.6) and how an observed phase change relates to it.

use std::collections::{BTreeMap, VecDeque};

use appwrapper_controller::api::Phase;

use Phase::*;

/// Every edge of the phase diagram of the seeds (the reference's documentation), plus
/// Resuming to Resetting (a retryable creation error past the admission grace period) and
/// Terminating. A Resetting AppWrapper is never failed directly: the retry budget is checked
/// where the failure is detected, so Resetting leads only to Resuming or Suspending. `Terminating` is entered from any phase once the
/// AppWrapper is deleted; the diagram shows it from the phases that can hold deployed
/// resources.
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
    /// Not an edge, but a path of several edges: a watch may skip the states between two
    /// events it delivers (after a re-list, for example), so this is fine. The path is the
    /// shortest one, both ends included.
    Skipped(Vec<Phase>),
    /// Entering `Terminating` from a phase the diagram does not draw it from; allowed because
    /// the AppWrapper is being deleted.
    Deleting,
    Invalid(String),
}

/// Classifies an observed phase change. `deleting` is whether the new state carries a
/// deletion timestamp.
pub fn classify(from: Phase, to: Phase, deleting: bool) -> Change {
    if to == Terminating {
        return if !deleting {
            Change::Invalid("Terminating without a deletion timestamp".into())
        } else if is_edge(from, to) {
            Change::Edge
        } else if from == Terminating {
            Change::Invalid("already Terminating".into())
        } else {
            Change::Deleting
        };
    }
    if is_edge(from, to) {
        return Change::Edge;
    }
    match shortest_path(from, to) {
        Some(path) => Change::Skipped(path),
        None => Change::Invalid(format!("{from} cannot lead to {to}")),
    }
}

/// The shortest path of edges (not through Terminating) from `from` to `to`.
pub fn shortest_path(from: Phase, to: Phase) -> Option<Vec<Phase>> {
    let mut previous: BTreeMap<Phase, Phase> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        for &(a, b) in &EDGES {
            if a != at || b == Terminating || b == from || previous.contains_key(&b) {
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
    #[case(Resetting, Running, false, Change::Skipped(vec![Resetting, Resuming, Running]))]
    #[case(Empty, Running, false, Change::Skipped(vec![Empty, Suspended, Resuming, Running]))]
    #[case(Running, Suspended, false, Change::Skipped(vec![Running, Suspending, Suspended]))]
    #[case(Running, Terminating, true, Change::Edge)]
    #[case(Suspended, Terminating, true, Change::Deleting)]
    fn valid_changes(
        #[case] from: Phase,
        #[case] to: Phase,
        #[case] deleting: bool,
        #[case] expected: Change,
    ) {
        assert_eq!(classify(from, to, deleting), expected);
    }

    #[rstest]
    #[case(Succeeded, Running, false)]
    #[case(Failed, Resetting, false)]
    #[case(Suspended, Empty, false)]
    #[case(Running, Terminating, false)]
    #[case(Terminating, Running, true)]
    fn invalid_changes(#[case] from: Phase, #[case] to: Phase, #[case] deleting: bool) {
        assert!(matches!(classify(from, to, deleting), Change::Invalid(_)));
    }

    #[test]
    fn suspending_can_reach_running_only_through_suspended_and_resuming() {
        assert_eq!(
            shortest_path(Suspending, Running),
            Some(vec![Suspending, Suspended, Resuming, Running])
        );
    }
}
