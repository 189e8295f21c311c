//! `awconf spec`: the behaviours of an area or of given ids, each with the scenarios that
//! check it at their file and line, so a reader can go from a sentence to its Gherkin.

use std::collections::BTreeMap;

use super::{Behaviour, Counts, ScenarioAt, Specification};

/// Which behaviours to show: those of `area` (all areas when `None`) and, when `ids` is not
/// empty, only those.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    pub area: Option<String>,
    pub ids: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectionError {
    #[error("no area {0:?}; the areas are: {1}")]
    UnknownArea(String, String),
    #[error("no behaviour {0}{1}")]
    UnknownBehaviour(String, String),
}

impl Selection {
    fn pick<'a>(&self, spec: &'a Specification) -> Result<Vec<&'a Behaviour>, SelectionError> {
        if let Some(area) = &self.area
            && !spec.areas.iter().any(|a| &a.id == area)
        {
            let areas: Vec<&str> = spec.areas.iter().map(|a| a.id.as_str()).collect();
            return Err(SelectionError::UnknownArea(area.clone(), areas.join(", ")));
        }
        for id in &self.ids {
            if spec.find(id).is_none() {
                return Err(SelectionError::UnknownBehaviour(
                    id.clone(),
                    spec.closest(id)
                        .map_or_else(String::new, |c| format!("; did you mean {c}?")),
                ));
            }
        }
        Ok(spec
            .behaviours()
            .filter(|(a, _)| self.area.as_ref().is_none_or(|want| &a.id == want))
            .filter(|(_, b)| self.ids.is_empty() || self.ids.contains(&b.id))
            .map(|(_, b)| b)
            .collect())
    }
}

/// The lines `awconf spec` prints.
pub fn listing(
    spec: &Specification,
    checked: &BTreeMap<String, Vec<ScenarioAt>>,
    selection: &Selection,
) -> Result<Vec<String>, SelectionError> {
    let picked = selection.pick(spec)?;
    let mut lines = Vec::new();
    for b in &picked {
        let area = spec
            .areas
            .iter()
            .find(|a| a.behaviours.iter().any(|o| o.id == b.id))
            .map_or("", |a| a.id.as_str());
        let extension = if b.extension { ", extension" } else { "" };
        lines.push(format!("{}  ({area}{extension})", b.id));
        lines.push(format!("  {}", b.statement));
        match checked.get(&b.id) {
            Some(scenarios) => {
                lines.push("  checked by:".to_string());
                lines.extend(scenarios.iter().map(|s| format!("    {s}")));
            }
            None => lines.push(format!(
                "  unchecked: {}",
                b.unchecked
                    .as_deref()
                    .unwrap_or("no scenario, and no reason given")
            )),
        }
    }
    lines.push(Counts::of(picked, checked).to_string());
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rstest::rstest;

    use super::*;

    fn spec() -> Specification {
        Specification::parse(
            "areas:\n  - id: a\n    title: A\n    behaviours:\n      - id: A-ONE\n        statement: It MUST work.\n  - id: b\n    title: B\n    behaviours:\n      - id: B-TWO\n        statement: It MAY rest.\n        unchecked: not observable\n        extension: true\n",
        )
        .unwrap()
    }

    fn checked() -> BTreeMap<String, Vec<ScenarioAt>> {
        BTreeMap::from([(
            "A-ONE".to_string(),
            vec![ScenarioAt {
                file: Path::new("features/a.feature").into(),
                line: 3,
                name: "works".into(),
            }],
        )])
    }

    #[rstest]
    #[case::all(None, &[], &["A-ONE  (a)", "  It MUST work.", "  checked by:", "    features/a.feature:3  works", "B-TWO  (b, extension)", "  It MAY rest.", "  unchecked: not observable", "2 behaviours: 1 checked by a scenario, 1 with a reason why none does (1 extensions of ours)"])]
    #[case::area(Some("b"), &[], &["B-TWO  (b, extension)", "  It MAY rest.", "  unchecked: not observable", "1 behaviours: 0 checked by a scenario, 1 with a reason why none does (1 extensions of ours)"])]
    #[case::id(None, &["A-ONE"], &["A-ONE  (a)", "  It MUST work.", "  checked by:", "    features/a.feature:3  works", "1 behaviours: 1 checked by a scenario, 0 with a reason why none does (0 extensions of ours)"])]
    fn behaviours_are_listed_with_their_scenarios(
        #[case] area: Option<&str>,
        #[case] ids: &[&str],
        #[case] want: &[&str],
    ) {
        let selection = Selection {
            area: area.map(String::from),
            ids: ids.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(listing(&spec(), &checked(), &selection).unwrap(), want);
    }

    #[rstest]
    #[case::area(Some("c"), &[], "no area \"c\"; the areas are: a, b")]
    #[case::id(None, &["A-ONR"], "no behaviour A-ONR; did you mean A-ONE?")]
    #[case::far(None, &["ZZZ-QQQ-XXX"], "no behaviour ZZZ-QQQ-XXX")]
    fn an_unknown_area_or_behaviour_is_refused(
        #[case] area: Option<&str>,
        #[case] ids: &[&str],
        #[case] want: &str,
    ) {
        let selection = Selection {
            area: area.map(String::from),
            ids: ids.iter().map(|s| s.to_string()).collect(),
        };
        let e = listing(&spec(), &checked(), &selection).unwrap_err();
        assert_eq!(e.to_string(), want);
    }
}
