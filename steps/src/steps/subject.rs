//! How steps name an AppWrapper: `it`, `its`, `the AppWrapper`, `the AppWrapper "x"`,
//! `the AppWrapper "x"'s`. A name selects that AppWrapper; the others mean the current one.

/// The AppWrapper a step talks about: `Some(name)` when the step names it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject(pub Option<String>);

impl std::str::FromStr for Subject {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text
            .split_once('"')
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(name, _)| name.to_string());
        Ok(Subject(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_taken_from_quotes() {
        assert_eq!("it".parse(), Ok(Subject(None)));
        assert_eq!("the AppWrapper".parse(), Ok(Subject(None)));
        assert_eq!(
            "the AppWrapper \"low\"'s".parse(),
            Ok(Subject(Some("low".into())))
        );
    }
}
