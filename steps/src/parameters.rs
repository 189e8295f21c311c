//! The words steps share, as cucumber parameter types written once: how a step names an
//! AppWrapper (`{subject}`: `it`, `the AppWrapper`, `the AppWrapper "x"`; `{whose}`: `its`,
//! `the AppWrapper "x"'s`), how long it may wait (`{deadline}`, `{within}`,
//! `{within_seconds}`), a quoted text (`{quoted}`, `{label}`), and the closed vocabularies of
//! condition statuses, reasons, pod phases and outcomes, GPU counts and CPU amounts. A name
//! selects that AppWrapper; the others mean the current one. Each value reads as the text it
//! holds (`Deref<Target = str>`), which is empty when an optional part is absent.

use cucumber::Parameter;

/// A parameter that holds the text it matched (less its fixed words): its FromStr keeps
/// what `$strip` leaves, and it reads as that text.
macro_rules! text_parameter {
    ($(#[$meta:meta])* $name:ident, $strip:expr) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                let strip: fn(&str) -> &str = $strip;
                Ok($name(strip(text).to_string()))
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// The AppWrapper a step talks about: `Some(name)` when the step names it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Parameter)]
#[param(name = "subject", regex = r#"it|the AppWrapper(?: "[^"]+")?"#)]
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

/// The possessive form of [`Subject`]: `its`, `the AppWrapper's`, `the AppWrapper "x"'s`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Parameter)]
#[param(name = "whose", regex = r#"its|the AppWrapper(?: "[^"]+")?'s"#)]
pub struct Whose(pub Subject);

impl std::str::FromStr for Whose {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(Whose)
    }
}

impl std::ops::Deref for Whose {
    type Target = Subject;

    fn deref(&self) -> &Subject {
        &self.0
    }
}

text_parameter!(
    /// A deadline as [`crate::deadlines::PATTERN`] writes it: `30 seconds`, `the detection period`.
    #[derive(Parameter)]
    #[param(
        name = "deadline",
        regex = r"\d+ seconds?|(?:the|\d+) detection periods?(?: plus \d+ seconds?)?"
    )]
    Deadline,
    |t| t
);

text_parameter!(
    /// An assertion's optional ` within <deadline>`: the deadline, or empty when the step reads
    /// the state once.
    #[derive(Parameter)]
    #[param(
        name = "within",
        regex = r"(?: within (?:\d+ seconds?|(?:the|\d+) detection periods?(?: plus \d+ seconds?)?))?"
    )]
    Within,
    |t| t.strip_prefix(" within ").unwrap_or(t)
);

text_parameter!(
    /// An optional ` within N seconds`: the number, or empty.
    #[derive(Parameter)]
    #[param(name = "within_seconds", regex = r"(?: within \d+ seconds)?")]
    WithinSeconds,
    |t| t
        .strip_prefix(" within ")
        .and_then(|t| t.strip_suffix(" seconds"))
        .unwrap_or(t)
);

text_parameter!(
    /// A text in double quotes, which may be empty: what is between them.
    #[derive(Parameter)]
    #[param(name = "quoted", regex = r#""[^"]*""#)]
    Quoted,
    |t| t
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t)
);

text_parameter!(
    /// A condition's status.
    #[derive(Parameter)]
    #[param(name = "status", regex = "True|False|Unknown")]
    ConditionStatus,
    |t| t
);

text_parameter!(
    /// An optional ` with reason R`: the reason, or empty.
    #[derive(Parameter)]
    #[param(name = "reason", regex = r"(?: with reason \w+)?")]
    Reason,
    |t| t.strip_prefix(" with reason ").unwrap_or(t)
);

text_parameter!(
    /// A pod phase.
    #[derive(Parameter)]
    #[param(name = "pod_phase", regex = "Running|Pending|Succeeded|Failed")]
    PodPhase,
    |t| t
);

text_parameter!(
    /// How pods end: `succeed`, or `fail with exit code N`.
    #[derive(Parameter)]
    #[param(name = "outcome", regex = r"succeed|fail with exit code \d+")]
    PodOutcome,
    |t| t
);

text_parameter!(
    /// An optional ` with N GPUs`: the number, or empty.
    #[derive(Parameter)]
    #[param(name = "gpus", regex = r"(?: with \d+ GPUs?)?")]
    Gpus,
    |t| t
        .strip_prefix(" with ")
        .and_then(|t| t.split(' ').next())
        .unwrap_or(t)
);

/// A whole or decimal number: `2`, `0.5`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Parameter)]
#[param(name = "number", regex = r"\d+(?:\.\d+)?")]
pub struct Number(pub f64);

impl std::str::FromStr for Number {
    type Err = std::num::ParseFloatError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(Number)
    }
}

impl std::fmt::Display for Number {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A node label in quotes, `"key=value"`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Parameter)]
#[param(name = "label", regex = r#""[^"=]+=[^"]*""#)]
pub struct Label {
    pub key: String,
    pub value: String,
}

impl std::str::FromStr for Label {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let inner = text.trim_matches('"');
        let (key, value) = inner
            .split_once('=')
            .ok_or_else(|| format!("{text} is not \"key=value\""))?;
        Ok(Label {
            key: key.to_string(),
            value: value.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use cucumber::Parameter;

    use super::*;

    #[test]
    fn names_are_taken_from_quotes() {
        assert_eq!("it".parse(), Ok(Subject(None)));
        assert_eq!("the AppWrapper".parse(), Ok(Subject(None)));
        assert_eq!(
            "the AppWrapper \"low\"'s".parse(),
            Ok(Whose(Subject(Some("low".into()))))
        );
    }

    #[test]
    fn deadlines_are_written_as_the_bounds_read_them() {
        assert_eq!(Deadline::REGEX, crate::deadlines::PATTERN);
        assert_eq!(
            Within::REGEX,
            format!("(?: within (?:{}))?", crate::deadlines::PATTERN)
        );
        assert_eq!(
            &*" within 30 seconds".parse::<Within>().unwrap(),
            "30 seconds"
        );
        assert_eq!(&*"".parse::<Within>().unwrap(), "");
    }

    #[test]
    fn optional_parts_read_as_their_value_or_nothing() {
        assert_eq!(&*" with reason Foo".parse::<Reason>().unwrap(), "Foo");
        assert_eq!(&*"".parse::<Reason>().unwrap(), "");
        assert_eq!(&*" with 2 GPUs".parse::<Gpus>().unwrap(), "2");
        assert_eq!(&*" with 1 GPU".parse::<Gpus>().unwrap(), "1");
        assert_eq!(&*" within 9 seconds".parse::<WithinSeconds>().unwrap(), "9");
        assert_eq!(
            "\"autopilot.ibm.com/gpuhealth=EVICT\"".parse(),
            Ok(Label {
                key: "autopilot.ibm.com/gpuhealth".into(),
                value: "EVICT".into()
            })
        );
    }

    #[test]
    fn a_quoted_text_is_what_is_between_the_quotes() {
        assert_eq!(&*"\"a b\"".parse::<Quoted>().unwrap(), "a b");
        assert_eq!(&*"\"\"".parse::<Quoted>().unwrap(), "");
    }
}
