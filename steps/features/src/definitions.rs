//! The step definitions a feature's steps must match, as read from those the suite's World
//! registers (the steps crate's `steps::registry`), and finding them from a step's text.

use cucumber::gherkin::StepType;
use regex::Regex;

use super::nearest;

/// How many known steps an unknown one is shown with.
pub(crate) const SUGGESTIONS: usize = 3;
/// Added to the distance of a definition for another keyword than the step's.
const OTHER_KEYWORD: f64 = 0.5;

/// One step definition: its keyword, its regex, the phrases the regex reads as, and where
/// its function is (`steps/src/steps/assertions.rs:216`).
#[derive(Clone, Debug)]
pub struct StepDefinition {
    pub keyword: StepType,
    pub regex: Regex,
    pub phrases: Vec<String>,
    pub location: String,
}

impl StepDefinition {
    pub fn new(keyword: StepType, regex: &str) -> Result<Self, regex::Error> {
        Ok(StepDefinition {
            keyword,
            regex: Regex::new(regex)?,
            phrases: nearest::phrases(regex),
            location: String::new(),
        })
    }

    /// A definition registered at `location` (`steps/src/steps/assertions.rs:216`).
    pub fn at(keyword: StepType, regex: Regex, location: String) -> Self {
        StepDefinition {
            keyword,
            phrases: nearest::phrases(regex.as_str()),
            regex,
            location,
        }
    }

    /// As cucumber matches: the regex found in the step's text, for the step's keyword
    /// (`And` and `But` take the keyword before them).
    pub fn matches(&self, keyword: StepType, text: &str) -> bool {
        self.keyword == keyword && self.regex.is_match(text)
    }
}

/// The definitions a step's text matches, whatever its keyword; a leading `Given`, `When`,
/// `Then`, `And`, `But` or `*` is ignored.
pub fn matching<'a>(text: &str, definitions: &'a [StepDefinition]) -> Vec<&'a StepDefinition> {
    let (_, text) = split_keyword(text);
    definitions
        .iter()
        .filter(|d| d.regex.is_match(text))
        .collect()
}

/// The definitions one of whose phrases contains `words` (any case): `stays` finds every
/// step that says it.
pub fn containing<'a>(words: &str, definitions: &'a [StepDefinition]) -> Vec<&'a StepDefinition> {
    let words = words.trim().to_lowercase();
    definitions
        .iter()
        .filter(|d| d.phrases.iter().any(|p| p.to_lowercase().contains(&words)))
        .collect()
}

/// The definitions closest to a step's text that matches none (as `awconf features check`
/// suggests them), for its keyword when it has one.
pub fn suggestions(text: &str, definitions: &[StepDefinition]) -> Vec<String> {
    let (keyword, text) = split_keyword(text);
    closest(keyword.unwrap_or(StepType::Then), text, definitions)
}

/// The known steps closest to a step, as `Keyword phrase`, best first.
pub fn closest(keyword: StepType, text: &str, definitions: &[StepDefinition]) -> Vec<String> {
    let mut ranked: Vec<(f64, String)> = definitions
        .iter()
        .filter_map(|d| {
            let (distance, phrase) = nearest::best_phrase(text, &d.phrases)?;
            let penalty = if d.keyword == keyword {
                0.0
            } else {
                OTHER_KEYWORD
            };
            Some((
                distance + penalty,
                format!("{} {phrase}", keyword_name(d.keyword)),
            ))
        })
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut suggestions: Vec<String> = Vec::new();
    for (_, suggestion) in ranked {
        if !suggestions.contains(&suggestion) {
            suggestions.push(suggestion);
        }
        if suggestions.len() == SUGGESTIONS {
            break;
        }
    }
    suggestions
}

/// A step's keyword, if written (`And`, `But` and `*` name none), and the rest of its text.
fn split_keyword(text: &str) -> (Option<StepType>, &str) {
    let text = text.trim();
    let keywords = [
        ("Given ", Some(StepType::Given)),
        ("When ", Some(StepType::When)),
        ("Then ", Some(StepType::Then)),
        ("And ", None),
        ("But ", None),
        ("* ", None),
    ];
    keywords
        .iter()
        .find_map(|(word, keyword)| Some((*keyword, text.strip_prefix(word)?.trim_start())))
        .unwrap_or((None, text))
}

pub fn keyword_name(keyword: StepType) -> &'static str {
    match keyword {
        StepType::Given => "Given",
        StepType::When => "When",
        StepType::Then => "Then",
    }
}
