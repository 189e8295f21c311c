//! What the monitor finds: broken invariants ([`Violation`]), among them what it could not
//! check, and the phase changes it saw ([`Transition`]).

use appwrapper_controller::api::Phase;
use chrono::{DateTime, Utc};

/// How the violation of states a re-list skipped begins.
pub const MISSED: &str =
    "the watch re-listed and missed states of this AppWrapper, which went unchecked";

/// How the violation of a change across a write the audit log shows no outcome of begins: the
/// write (a server error, or a request the API server never finished) may have left a state.
pub const UNLOGGED: &str = "a write to this AppWrapper whose outcome the audit log does not show \
     may have left states that went unchecked";

/// How a state the audit log wrote after a later one begins: it was not checked in its place.
pub const OUT_OF_ORDER: &str =
    "the audit log wrote a state of this AppWrapper after a later one, and it went unchecked";

/// How a release whose leftovers could not be read (the API server did not answer) begins.
pub const NOT_CHECKED: &str = "could not check for leftovers";

/// A broken invariant, with the states before and after (YAML).
#[derive(Clone, Debug)]
pub struct Violation {
    pub namespace: String,
    pub name: String,
    pub message: String,
    pub before: Option<String>,
    pub after: String,
    pub at: DateTime<Utc>,
}

impl Violation {
    /// What the monitor could not check, rather than a state or a change it saw break a rule:
    /// states a re-list skipped or a write of unknown outcome may have left, a state logged out
    /// of order, or a release whose leftovers it could not read.
    pub fn is_unchecked(&self) -> bool {
        [MISSED, UNLOGGED, OUT_OF_ORDER, NOT_CHECKED]
            .iter()
            .any(|prefix| self.message.starts_with(prefix))
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "AppWrapper {}: {}", self.name, self.message)?;
        if let Some(before) = &self.before {
            writeln!(f, "--- before:\n{before}")?;
        }
        write!(f, "--- after:\n{}", self.after)
    }
}

/// How a phase change was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransitionKind {
    /// An edge of the graph, from one watch event to the next.
    Edge,
    /// Across a re-list of the watch, which skipped states: the path is inferred (and reported
    /// as a violation, since the states in between went unchecked).
    Inferred,
    /// Not allowed by the graph (reported as a violation).
    Invalid,
}

/// A phase change the watch delivered.
#[derive(Clone, Debug)]
pub struct Transition {
    pub namespace: String,
    pub name: String,
    pub from: Phase,
    pub to: Phase,
    pub kind: TransitionKind,
    /// The phases passed through, both ends included: two, or the shortest path for an
    /// inferred change.
    pub path: Vec<Phase>,
    pub at: DateTime<Utc>,
}

impl Transition {
    /// Seen from one watch event to the next (as opposed to inferred across a re-list).
    pub fn direct(&self) -> bool {
        self.kind != TransitionKind::Inferred
    }

    /// Whether this is the edge `from → to`, seen directly.
    pub fn observed(&self, from: Phase, to: Phase) -> bool {
        self.kind == TransitionKind::Edge && self.from == from && self.to == to
    }

    /// The edges this change took.
    pub fn edges(&self) -> impl Iterator<Item = (Phase, Phase)> + '_ {
        self.path.windows(2).map(|w| (w[0], w[1]))
    }

    /// `A → B`, with what the monitor made of it.
    pub fn describe(&self) -> String {
        let path: Vec<String> = self.path.iter().map(ToString::to_string).collect();
        let note = match self.kind {
            TransitionKind::Edge => "",
            TransitionKind::Inferred => " (inferred across a re-list: states missed, violation)",
            TransitionKind::Invalid => " (not an edge: violation)",
        };
        format!("{}{note}", path.join(" → "))
    }
}
