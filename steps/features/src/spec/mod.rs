//! The specification of a conforming AppWrapper controller: numbered behaviours
//! (`spec/behaviours.yaml`, compiled in), the scenarios that check each of them, and the
//! ways to show them (`awconf spec`, and the rendered `spec/README.md`).

mod listing;
mod model;
mod render;
mod trace;

use std::sync::LazyLock;

pub use listing::{Selection, SelectionError, listing};
pub use model::{Area, Behaviour, SpecError, Specification, is_id};
pub use render::markdown;
pub use trace::{ScenarioAt, TAG_PREFIX, behaviour_ids, by_behaviour, named_by, scenarios};

/// Where the specification is in the source tree, as problems and pages name it.
pub const PATH: &str = "spec/behaviours.yaml";

/// The text of the specification.
pub const TEXT: &str = include_str!("../../../../spec/behaviours.yaml");

/// The specification compiled into awconf.
pub fn built_in() -> &'static Specification {
    static SPEC: LazyLock<Specification> =
        LazyLock::new(|| Specification::parse(TEXT).unwrap_or_else(|e| panic!("{PATH} {e}")));
    &SPEC
}

/// How many behaviours there are, how many a scenario checks, how many say why none does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub behaviours: usize,
    pub checked: usize,
    pub with_reason: usize,
    pub extensions: usize,
}

impl Counts {
    pub fn of<'a>(
        behaviours: impl IntoIterator<Item = &'a Behaviour>,
        checked: &std::collections::BTreeMap<String, Vec<ScenarioAt>>,
    ) -> Counts {
        let mut counts = Counts::default();
        for b in behaviours {
            counts.behaviours += 1;
            counts.checked += usize::from(checked.contains_key(&b.id));
            counts.with_reason += usize::from(b.unchecked.is_some());
            counts.extensions += usize::from(b.extension);
        }
        counts
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} behaviours: {} checked by a scenario, {} with a reason why none does ({} extensions of ours)",
            self.behaviours, self.checked, self.with_reason, self.extensions
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_specification_parses() {
        assert!(built_in().behaviours().count() > 0);
    }
}
