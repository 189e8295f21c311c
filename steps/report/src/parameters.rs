//! The fault-tolerance parameters of the AppWrapper design (seed 002, "Configuration
//! Details"), and which scenarios test each: those whose text names its annotation, its
//! configuration field or the parameter itself.

/// One row of the seed's table, with the controller configuration field that sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parameter {
    pub name: &'static str,
    pub default: &'static str,
    /// The annotation without its prefix `workload.codeflare.dev.appwrapper/`.
    pub annotation: Option<&'static str>,
    /// The field of `faultTolerance` in the operator's configuration, when there is one.
    pub config_field: Option<&'static str>,
}

pub const PARAMETERS: [Parameter; 9] = [
    Parameter {
        name: "AdmissionGracePeriod",
        default: "1 Minute",
        annotation: Some("admissionGracePeriodDuration"),
        config_field: Some("admissionGracePeriod"),
    },
    Parameter {
        name: "WarmupGracePeriod",
        default: "5 Minutes",
        annotation: Some("warmupGracePeriodDuration"),
        config_field: Some("warmupGracePeriod"),
    },
    Parameter {
        name: "FailureGracePeriod",
        default: "1 Minute",
        annotation: Some("failureGracePeriodDuration"),
        config_field: Some("failureGracePeriod"),
    },
    Parameter {
        name: "RetryPausePeriod",
        default: "90 Seconds",
        annotation: Some("retryPausePeriodDuration"),
        config_field: Some("resetPause"),
    },
    Parameter {
        name: "RetryLimit",
        default: "3",
        annotation: Some("retryLimit"),
        config_field: Some("retryLimit"),
    },
    Parameter {
        name: "DeletionOnFailureGracePeriod",
        default: "0 Seconds",
        annotation: Some("deletionOnFailureGracePeriodDuration"),
        config_field: None,
    },
    Parameter {
        name: "ForcefulDeletionGracePeriod",
        default: "10 Minutes",
        annotation: Some("forcefulDeletionGracePeriodDuration"),
        config_field: Some("deletionGracePeriod"),
    },
    Parameter {
        name: "SuccessTTL",
        default: "7 Days",
        annotation: Some("successTTLDuration"),
        config_field: Some("successTTLCeiling"),
    },
    Parameter {
        name: "GracePeriodMaximum",
        default: "24 Hours",
        annotation: None,
        config_field: Some("gracePeriodCeiling"),
    },
];

impl Parameter {
    /// The full annotation key.
    pub fn annotation_key(&self) -> Option<String> {
        self.annotation
            .map(|a| format!("{}{a}", features::annotations::PREFIX))
    }

    /// Whether `text` names this parameter: its annotation, configuration field or name, as
    /// a whole word (`failureGracePeriod` is not found in `deletionOnFailureGracePeriod`).
    pub fn is_named_in(&self, text: &str) -> bool {
        self.annotation
            .into_iter()
            .chain(self.config_field)
            .chain([self.name])
            .any(|term| contains_word(text, term))
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `term` occurs in `text` with no letter, digit or `_` right before or after it.
pub fn contains_word(text: &str, term: &str) -> bool {
    text.match_indices(term).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + term.len()..].chars().next();
        !before.is_some_and(is_word_char) && !after.is_some_and(is_word_char)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(text: &str) -> Vec<&'static str> {
        PARAMETERS
            .iter()
            .filter(|p| p.is_named_in(text))
            .map(|p| p.name)
            .collect()
    }

    #[test]
    fn scenarios_are_matched_by_whole_names() {
        let cases: [(&str, &[&str]); 7] = [
            ("| retryLimit | 1 |", &["RetryLimit"]),
            (
                "| deletionOnFailureGracePeriodDuration | 1h |",
                &["DeletionOnFailureGracePeriod"],
            ),
            (
                "message: workload.codeflare.dev.appwrapper/failureGracePeriodDuration has value",
                &["FailureGracePeriod"],
            ),
            (
                "Scenario: GracePeriodMaximum clamps a longer grace period",
                &["GracePeriodMaximum"],
            ),
            (
                "DeletionOnFailureGracePeriod keeps a failed workload's resources",
                &["DeletionOnFailureGracePeriod"],
            ),
            (
                "its annotation \"successTTLDuration\" is \"10s\"",
                &["SuccessTTL"],
            ),
            ("retryLimits and xretryLimit", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(named(text), want.to_vec(), "{text}");
        }
    }

    #[test]
    fn the_annotations_are_those_the_steps_accept() {
        for p in PARAMETERS {
            if let Some(a) = p.annotation {
                assert_eq!(
                    features::annotations::key(a).unwrap(),
                    p.annotation_key().unwrap()
                );
            }
        }
    }
}
