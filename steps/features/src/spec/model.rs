//! The specification's data: areas of numbered behaviours, read from YAML and checked for
//! shape (ids unique and well formed, each statement a requirement, each reason written).

use serde::Deserialize;

use crate::nearest::distance as phrase_distance;

/// Every behaviour of a conforming controller, by area.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Specification {
    pub areas: Vec<Area>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Area {
    pub id: String,
    pub title: String,
    pub behaviours: Vec<Behaviour>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Behaviour {
    pub id: String,
    /// One sentence with MUST, MUST NOT or MAY.
    pub statement: String,
    /// Why no scenario checks it; `None` for a behaviour the features must check.
    #[serde(default)]
    pub unchecked: Option<String>,
    /// A deliberate difference of ours from the reference operator.
    #[serde(default)]
    pub extension: bool,
    /// Its line in the YAML text (of its `- id:`).
    #[serde(skip)]
    pub line: usize,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("does not parse: {0}")]
    Parse(String),
    #[error("behaviour {0} is listed more than once")]
    Duplicate(String),
    #[error("behaviour id {0:?} is not of the form AREA-WORDS in capitals, digits and hyphens")]
    BadId(String),
    #[error("behaviour {0} says neither MUST nor MAY")]
    NoRequirement(String),
    #[error("behaviour {0} has an empty reason for being unchecked")]
    EmptyReason(String),
    #[error("area {0} has no behaviours")]
    EmptyArea(String),
}

/// How far (in words, a changed letter counting its share of a word) a misspelt id may be
/// from the one it is taken for.
const CLOSE: f64 = 1.5;

/// The RFC 2119 words a statement must use one of.
const REQUIREMENT_WORDS: [&str; 2] = ["MUST", "MAY"];

impl Specification {
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let mut spec: Specification =
            serde_saphyr::from_str(text).map_err(|e| SpecError::Parse(e.to_string()))?;
        for behaviour in spec.areas.iter_mut().flat_map(|a| a.behaviours.iter_mut()) {
            behaviour.line = line_of(text, &behaviour.id);
        }
        spec.validate()?;
        Ok(spec)
    }

    fn validate(&self) -> Result<(), SpecError> {
        let mut seen = std::collections::BTreeSet::new();
        for area in &self.areas {
            if area.behaviours.is_empty() {
                return Err(SpecError::EmptyArea(area.id.clone()));
            }
            for b in &area.behaviours {
                if !is_id(&b.id) {
                    return Err(SpecError::BadId(b.id.clone()));
                }
                if !seen.insert(b.id.as_str()) {
                    return Err(SpecError::Duplicate(b.id.clone()));
                }
                if !b
                    .statement
                    .split(|c: char| !c.is_ascii_alphabetic())
                    .any(|word| REQUIREMENT_WORDS.contains(&word))
                {
                    return Err(SpecError::NoRequirement(b.id.clone()));
                }
                if b.unchecked.as_deref().is_some_and(|r| r.trim().is_empty()) {
                    return Err(SpecError::EmptyReason(b.id.clone()));
                }
            }
        }
        Ok(())
    }

    pub fn behaviours(&self) -> impl Iterator<Item = (&Area, &Behaviour)> {
        self.areas
            .iter()
            .flat_map(|a| a.behaviours.iter().map(move |b| (a, b)))
    }

    pub fn find(&self, id: &str) -> Option<&Behaviour> {
        self.behaviours().map(|(_, b)| b).find(|b| b.id == id)
    }

    /// The id closest to a misspelt one, if any is close.
    pub fn closest(&self, id: &str) -> Option<&str> {
        let words = |id: &str| id.to_ascii_uppercase().replace('-', " ");
        let wanted = words(id);
        self.behaviours()
            .map(|(_, b)| (phrase_distance(&wanted, &words(&b.id)), b.id.as_str()))
            .filter(|(d, _)| *d <= CLOSE)
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, id)| id)
    }
}

/// `AREA-WORDS`: capitals and digits, in at least two parts joined by hyphens.
pub fn is_id(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        && parts[0].chars().all(|c| c.is_ascii_uppercase())
}

fn line_of(text: &str, id: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().strip_prefix("- id:").map(str::trim) == Some(id))
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn one(behaviour: &str) -> String {
        format!("areas:\n  - id: a\n    title: A\n    behaviours:\n{behaviour}")
    }

    #[test]
    fn behaviours_are_read_with_their_line() {
        let text = one(
            "      - id: PH-ONE\n        statement: It MUST work.\n      - id: PH-TWO\n        statement: It MAY rest.\n        unchecked: not observable\n        extension: true\n",
        );
        let spec = Specification::parse(&text).unwrap();
        let two = spec.find("PH-TWO").unwrap();
        assert_eq!(two.line, 7);
        assert_eq!(two.unchecked.as_deref(), Some("not observable"));
        assert!(two.extension);
        assert_eq!(spec.find("PH-ONE").unwrap().line, 5);
    }

    #[rstest]
    #[case::duplicate(
        "      - id: PH-ONE\n        statement: It MUST.\n      - id: PH-ONE\n        statement: It MUST.\n",
        SpecError::Duplicate("PH-ONE".into())
    )]
    #[case::bad_id("      - id: ph-one\n        statement: It MUST.\n", SpecError::BadId("ph-one".into()))]
    #[case::one_part("      - id: PH\n        statement: It MUST.\n", SpecError::BadId("PH".into()))]
    #[case::no_requirement(
        "      - id: PH-ONE\n        statement: It must, quietly.\n",
        SpecError::NoRequirement("PH-ONE".into())
    )]
    #[case::empty_reason(
        "      - id: PH-ONE\n        statement: It MUST.\n        unchecked: \" \"\n",
        SpecError::EmptyReason("PH-ONE".into())
    )]
    fn a_malformed_behaviour_is_refused(#[case] behaviours: &str, #[case] want: SpecError) {
        assert_eq!(Specification::parse(&one(behaviours)), Err(want));
    }

    #[test]
    fn an_unknown_field_is_refused() {
        let text = one("      - id: PH-ONE\n        statement: It MUST.\n        checked: yes\n");
        assert!(matches!(
            Specification::parse(&text),
            Err(SpecError::Parse(_))
        ));
    }
}
