//! The step definitions a feature's steps must match: those `#[given]`, `#[when]` and
//! `#[then]` register for [`AwWorld`] (see [`crate::steps`]).

use cucumber::codegen::{StepConstructor as _, WorldInventory, inventory};
use cucumber::gherkin::StepType;
use regex::Regex;

use super::nearest;
use crate::world::AwWorld;

/// One step definition: its keyword, its regex, and the phrases the regex reads as.
#[derive(Clone, Debug)]
pub struct StepDefinition {
    pub keyword: StepType,
    pub regex: Regex,
    pub phrases: Vec<String>,
}

impl StepDefinition {
    pub fn new(keyword: StepType, regex: &str) -> Result<Self, regex::Error> {
        Ok(StepDefinition {
            keyword,
            regex: Regex::new(regex)?,
            phrases: nearest::phrases(regex),
        })
    }

    /// As cucumber matches: the regex found in the step's text, for the step's keyword
    /// (`And` and `But` take the keyword before them).
    pub fn matches(&self, keyword: StepType, text: &str) -> bool {
        self.keyword == keyword && self.regex.is_match(text)
    }
}

/// The suite's step definitions, by keyword and regex.
pub fn registered() -> Vec<StepDefinition> {
    let mut definitions = Vec::new();
    let mut add = |keyword, regex: Regex| {
        definitions.push(StepDefinition {
            keyword,
            phrases: nearest::phrases(regex.as_str()),
            regex,
        });
    };
    for step in inventory::iter::<<AwWorld as WorldInventory>::Given> {
        add(StepType::Given, (step.inner().1)());
    }
    for step in inventory::iter::<<AwWorld as WorldInventory>::When> {
        add(StepType::When, (step.inner().1)());
    }
    for step in inventory::iter::<<AwWorld as WorldInventory>::Then> {
        add(StepType::Then, (step.inner().1)());
    }
    definitions.sort_by_key(|d| (keyword_name(d.keyword), d.regex.as_str().to_string()));
    definitions
}

pub fn keyword_name(keyword: StepType) -> &'static str {
    match keyword {
        StepType::Given => "Given",
        StepType::When => "When",
        StepType::Then => "Then",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suite_registers_its_steps() {
        let definitions = registered();
        assert!(definitions.len() > 50, "{}", definitions.len());
        let reaches = definitions
            .iter()
            .find(|d| d.regex.as_str().contains("reaches phase (\\w+) within"))
            .expect("the `reaches phase` step");
        assert!(reaches.matches(StepType::Then, "it reaches phase Running within 30 seconds"));
        assert!(!reaches.matches(StepType::When, "it reaches phase Running within 30 seconds"));
    }
}
