//! The known steps closest to an unknown one. A step definition's regex is read as the phrases
//! it accepts (alternatives spelled out, optional parts with and without); values it captures
//! read as `N` (a number), `"…"` (a quoted text) or `…` (any word). A step's text is written
//! the same way, and phrases are ranked by an edit distance over words.

use regex_syntax::ast::{self, Ast, ClassPerlKind, RepetitionKind};

/// A captured value other than a number.
const ANY: &str = "…";
/// More phrases than this per definition are not spelled out.
const MAX_PHRASES: usize = 256;

/// The phrases a step regex reads as; the regex source itself when it does not parse.
pub fn phrases(regex: &str) -> Vec<String> {
    match ast::parse::Parser::new().parse(regex) {
        Ok(ast) => {
            let mut phrases: Vec<String> = spell(&ast)
                .into_iter()
                .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            phrases.sort();
            phrases.dedup();
            phrases
        }
        Err(_) => vec![regex.to_string()],
    }
}

fn spell(ast: &Ast) -> Vec<String> {
    match ast {
        Ast::Empty(_) | Ast::Flags(_) | Ast::Assertion(_) => vec![String::new()],
        Ast::Literal(literal) => vec![literal.c.to_string()],
        Ast::Dot(_) | Ast::ClassUnicode(_) | Ast::ClassBracketed(_) => vec![ANY.into()],
        Ast::ClassPerl(class) => vec![value_of(class).into()],
        Ast::Repetition(repetition) => {
            let inner = match repetition.ast.as_ref() {
                Ast::ClassPerl(class) => return vec![value_of(class).into()],
                Ast::Dot(_) | Ast::ClassUnicode(_) | Ast::ClassBracketed(_) => {
                    return vec![ANY.into()];
                }
                // `seconds?` reads as `seconds`: the plural alone is not worth a phrase.
                Ast::Literal(literal) => return vec![literal.c.to_string()],
                inner => spell(inner),
            };
            match repetition.op.kind {
                RepetitionKind::ZeroOrOne | RepetitionKind::ZeroOrMore => {
                    std::iter::once(String::new()).chain(inner).collect()
                }
                RepetitionKind::OneOrMore | RepetitionKind::Range(_) => inner,
            }
        }
        Ast::Group(group) => spell(&group.ast),
        Ast::Alternation(alternation) => alternation
            .asts
            .iter()
            .flat_map(spell)
            .take(MAX_PHRASES)
            .collect(),
        Ast::Concat(concat) => concat.asts.iter().fold(vec![String::new()], |heads, ast| {
            let tails = spell(ast);
            heads
                .iter()
                .flat_map(|head| tails.iter().map(move |tail| format!("{head}{tail}")))
                .take(MAX_PHRASES)
                .collect()
        }),
    }
}

fn value_of(class: &ast::ClassPerl) -> &'static str {
    match (&class.kind, class.negated) {
        (ClassPerlKind::Digit, false) => "N",
        _ => ANY,
    }
}

/// A step's text as phrases are written: quoted texts as `"…"`, numbers as `N`.
pub fn normalize(text: &str) -> String {
    let mut unquoted = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        let Some(close) = rest[open + 1..].find('"') else {
            break;
        };
        unquoted.push_str(&rest[..open]);
        unquoted.push_str("\"…\"");
        rest = &rest[open + 1 + close + 1..];
    }
    unquoted.push_str(rest);
    unquoted
        .split_whitespace()
        .map(|word| {
            if word.chars().all(|c| c.is_ascii_digit()) {
                "N"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Edit distance between two phrases over their words. A `…` word stands for any one word;
/// replacing a word costs the share of its letters that change, so a typo costs less than
/// another word.
pub fn distance(a: &str, b: &str) -> f64 {
    let a: Vec<&str> = a.split_whitespace().collect();
    let b: Vec<&str> = b.split_whitespace().collect();
    let mut previous: Vec<f64> = (0..=b.len()).map(|j| j as f64).collect();
    for (i, word) in a.iter().enumerate() {
        let mut current = vec![(i + 1) as f64];
        for (j, other) in b.iter().enumerate() {
            let replace = previous[j] + word_cost(word, other);
            let value = replace.min(previous[j + 1] + 1.0).min(current[j] + 1.0);
            current.push(value);
        }
        previous = current;
    }
    previous[b.len()]
}

fn word_cost(a: &str, b: &str) -> f64 {
    if a == b || a == ANY || b == ANY {
        return 0.0;
    }
    let longer = a.chars().count().max(b.chars().count());
    strsim::levenshtein(a, b) as f64 / longer as f64
}

/// The one of a definition's `phrases` closest to a step's `text`, with its distance.
pub fn best_phrase<'a>(text: &str, phrases: &'a [String]) -> Option<(f64, &'a str)> {
    let text = normalize(text);
    phrases
        .iter()
        .map(|phrase| (distance(&text, phrase), phrase.as_str()))
        .min_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regexes_read_as_phrases() {
        let table: &[(&str, &[&str])] = &[
            (
                r#"^(it|the AppWrapper(?: "[^"]+")?) is in phase (\w+)$"#,
                &[
                    "it is in phase …",
                    "the AppWrapper \"…\" is in phase …",
                    "the AppWrapper is in phase …",
                ],
            ),
            (
                r"^the ClusterQueue has a quota of (\d+) CPUs?$",
                &["the ClusterQueue has a quota of N CPUs"],
            ),
            (
                r"^the controller is (?:started|restarted)(?: again)?$",
                &[
                    "the controller is restarted",
                    "the controller is restarted again",
                    "the controller is started",
                    "the controller is started again",
                ],
            ),
            (r"^an AppWrapper (.+)$", &["an AppWrapper …"]),
            (r"^broken (regex$", &[r"^broken (regex$"]),
        ];
        for (regex, want) in table {
            assert_eq!(phrases(regex), *want, "{regex}");
        }
    }

    #[test]
    fn step_text_is_written_as_phrases_are() {
        let table = [
            (
                r#"the AppWrapper "a b" reaches phase Running within 30 seconds"#,
                r#"the AppWrapper "…" reaches phase Running within N seconds"#,
            ),
            ("its pods  succeed", "its pods succeed"),
            (r#"an unclosed "quote"#, r#"an unclosed "quote"#),
        ];
        for (text, want) in table {
            assert_eq!(normalize(text), want);
        }
    }

    #[test]
    fn distance_counts_words_and_forgives_typos() {
        let table = [
            ("it is in phase Running", "it is in phase …", 0.0),
            ("it is in phase", "it is in phase …", 1.0),
            ("it reaches phaze …", "it reaches phase …", 0.2),
            ("it is phase Running", "it is in phase …", 1.0),
            ("", "a b", 2.0),
        ];
        for (a, b, want) in table {
            let got = distance(a, b);
            assert!((got - want).abs() < 1e-9, "{a:?} ~ {b:?}: {got} != {want}");
        }
    }

    #[test]
    fn the_best_phrase_of_a_definition_is_the_closest() {
        let phrases = phrases(r#"^(it|the AppWrapper(?: "[^"]+")?) is deleted$"#);
        let (d, best) = best_phrase(r#"the AppWrapper "x" is deleted"#, &phrases).unwrap();
        assert_eq!((d, best), (0.0, r#"the AppWrapper "…" is deleted"#));
    }
}
