//! `awconf report summary DIR`: a run's results (its `results.json`) as GitHub-flavoured
//! Markdown for a CI job's summary (`$GITHUB_STEP_SUMMARY`): the closing line, a table of the
//! features with their verdicts and counts, every failed scenario with its first mismatch,
//! and the behaviours of the specification that the failed scenarios check.
//!
//! Everything that comes from the run (feature and scenario names, failure messages) is
//! escaped: it is shown as text, never read as Markdown or HTML.

use std::collections::BTreeMap;

use super::results::{RunResults, ScenarioResult};
use crate::status::Status;

/// The longest first mismatch shown, in characters; the scenario's page has the rest.
pub const MISMATCH_CHARS: usize = 300;
/// The most failed scenarios listed; the report has the others.
pub const MAX_FAILED: usize = 50;

/// What cucumber puts before the message of a step that panicked.
const PANIC_PREFIX: &str = "Step panicked. Captured output: ";

/// One feature's scenarios by outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureCounts {
    pub passed: usize,
    pub failed: usize,
    pub flaky: usize,
    pub skipped: usize,
}

impl FeatureCounts {
    fn add(&mut self, status: Status) {
        match status {
            Status::Passed => self.passed += 1,
            Status::Failed => self.failed += 1,
            Status::Flaky => self.flaky += 1,
            Status::Skipped => self.skipped += 1,
        }
    }

    /// A failure decides; then a flaky pass; a feature none of whose scenarios ran was
    /// skipped.
    pub fn verdict(&self) -> &'static str {
        if self.failed > 0 {
            "❌ failed"
        } else if self.flaky > 0 {
            "⚠️ flaky"
        } else if self.passed > 0 {
            "✅ passed"
        } else {
            "⏭️ skipped"
        }
    }
}

/// The features by name, each with its counts.
pub fn feature_counts(results: &RunResults) -> BTreeMap<&str, FeatureCounts> {
    let mut features: BTreeMap<&str, FeatureCounts> = BTreeMap::new();
    for s in &results.scenarios {
        features
            .entry(s.feature.as_str())
            .or_default()
            .add(s.status);
    }
    features
}

/// The Markdown of a run's results, under the heading `title`.
pub fn render(title: &str, results: &RunResults) -> String {
    let features = feature_counts(results);
    let total = features
        .values()
        .fold(FeatureCounts::default(), |mut all, c| {
            all.passed += c.passed;
            all.failed += c.failed;
            all.flaky += c.flaky;
            all.skipped += c.skipped;
            all
        });
    let icon = match (total.failed, total.passed + total.flaky) {
        (0, 0) => "⚠️",
        (0, _) => "✅",
        _ => "❌",
    };
    let mut out = format!("## {}\n\n", escape(title));
    out += &format!(
        "{icon} **{}** in {:.0} s\n\n",
        escape(&results.closing_line),
        results.seconds
    );
    if !results.context.is_empty() {
        out += &format!("{}\n\n", escape(&results.context));
    }
    if features.is_empty() {
        out += "No scenario ran.\n";
        return out;
    }
    let flaky = total.flaky > 0;
    out += "| Feature | Verdict | Passed | Failed |";
    out += if flaky { " Flaky |" } else { "" };
    out += " Skipped |\n|:--|:--|--:|--:|";
    out += if flaky { "--:|" } else { "" };
    out += "--:|\n";
    for (feature, c) in &features {
        out += &format!(
            "| {} | {} | {} | {} |",
            escape(feature),
            c.verdict(),
            c.passed,
            c.failed
        );
        if flaky {
            out += &format!(" {} |", c.flaky);
        }
        out += &format!(" {} |\n", c.skipped);
    }
    let mut failed: Vec<&ScenarioResult> = results
        .scenarios
        .iter()
        .filter(|s| s.status == Status::Failed)
        .collect();
    if failed.is_empty() {
        return out;
    }
    failed.sort_by(|a, b| (&a.feature, &a.scenario).cmp(&(&b.feature, &b.scenario)));
    out += "\n### Failed scenarios\n\n| Feature | Scenario | First mismatch |\n|:--|:--|:--|\n";
    for s in failed.iter().take(MAX_FAILED) {
        let message = s.failure.as_deref().or(s.reason.as_deref()).unwrap_or("");
        out += &format!(
            "| {} | {} | {} |\n",
            escape(&s.feature),
            escape(&s.scenario),
            escape(&first_mismatch(message))
        );
    }
    if failed.len() > MAX_FAILED {
        out += &format!(
            "\n… and {} more failed scenarios: the report has them all.\n",
            failed.len() - MAX_FAILED
        );
    }
    let broken = results.broken_behaviours();
    if !broken.is_empty() {
        out += "\n### Broken behaviours\n\n";
        for (id, scenarios) in &broken {
            let names: Vec<String> = scenarios.iter().map(|s| escape(&s.scenario)).collect();
            out += &format!("- `{id}`: {}\n", names.join("; "));
        }
    }
    out += "\nEach failed scenario's page in the report (`scenarios/<namespace>/index.html`) \
            has its whole failure, its timelines, events and logs.\n";
    out
}

/// The head of a failure message, on one line: its first line (without cucumber's panic
/// prefix) and, when the message lists mismatches, the first of them; a first line that ends
/// in `:` gets the line after it. At most [`MISMATCH_CHARS`] characters.
pub fn first_mismatch(failure: &str) -> String {
    let text = strip_ansi(failure);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = lines.next() else {
        return "(no message)".into();
    };
    let head = first.strip_prefix(PANIC_PREFIX).unwrap_or(first).trim();
    let rest: Vec<&str> = lines.collect();
    let listed = rest
        .iter()
        .skip_while(|l| **l != "mismatches:")
        .nth(1)
        .and_then(|l| l.strip_prefix("- "));
    let detail = listed.or_else(|| head.ends_with(':').then(|| rest.first().copied()).flatten());
    let line = match detail {
        Some(detail) => format!("{}: {}", head.trim_end_matches(':'), detail.trim()),
        None => head.to_string(),
    };
    truncate(&collapse_whitespace(&line), MISMATCH_CHARS)
}

/// Text for a Markdown table cell: one line, and every character Markdown, GitHub or HTML
/// could read as syntax escaped with a backslash (`|` included, which ends a cell).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '$' | '@' | '#' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// `text` without terminal colour codes (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters, the cut marked with `…`.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::FORMAT;
    use rstest::rstest;

    #[rstest]
    #[case::a_wait_that_timed_out(
        "Step panicked. Captured output: timed out after 30s waiting for AppWrapper a to match\n\
         last seen:\nmismatches:\n  - .status.phase: expected \"Running\", got \"Suspended\"\n  \
         - .status.conditions[type=QuotaReserved].status: expected \"True\", got \"False\"\n\
         diff:\n--- expected\n+++ actual",
        "timed out after 30s waiting for AppWrapper a to match: .status.phase: expected \
         \"Running\", got \"Suspended\""
    )]
    #[case::a_single_read(
        "expected AppWrapper a to match, but it is not so (read once):\nmismatches:\n  - \
         .status.phase: expected \"Running\", got \"Failed\"",
        "expected AppWrapper a to match, but it is not so (read once): .status.phase: expected \
         \"Running\", got \"Failed\""
    )]
    #[case::a_colon_takes_the_next_line(
        "\n\nAppWrapper a Running: cannot happen any more after 1.5s:\n  it is Failed\nmore",
        "AppWrapper a Running: cannot happen any more after 1.5s: it is Failed"
    )]
    #[case::one_line("invariant violated: a → b", "invariant violated: a → b")]
    #[case::colours_and_tabs("\u{1b}[31mboom\u{1b}[0m\tnow", "boom now")]
    #[case::nothing("  \n ", "(no message)")]
    fn the_first_mismatch_is_the_head_of_the_failure(#[case] failure: &str, #[case] want: &str) {
        assert_eq!(first_mismatch(failure), want);
    }

    #[test]
    fn a_long_first_mismatch_is_cut() {
        let shown = first_mismatch(&"é".repeat(1000));
        assert_eq!(shown.chars().count(), MISMATCH_CHARS);
        assert!(shown.ends_with('…'));
    }

    #[rstest]
    #[case::a_pipe_ends_no_cell("a | b", r"a \| b")]
    #[case::html_is_text("<img src=x onerror=alert(1)>", r"\<img src=x onerror=alert(1)\>")]
    #[case::emphasis_links_and_code("*a* _b_ [c](d) `e`", r"\*a\* \_b\_ \[c\](d) \`e\`")]
    #[case::mentions_math_and_entities("@org $x$ &amp;", r"\@org \$x\$ \&amp;")]
    #[case::backslashes_first(r"\|", r"\\\|")]
    #[case::one_line("a\nb\r\tc", "a b  c")]
    #[case::plain_text_stays(
        "AppWrapper a: expected Running, got Failed (1.5s)",
        "AppWrapper a: expected Running, got Failed (1.5s)"
    )]
    fn cells_are_escaped(#[case] text: &str, #[case] want: &str) {
        assert_eq!(escape(text), want);
    }

    fn scenario(feature: &str, name: &str, status: Status) -> ScenarioResult {
        ScenarioResult {
            feature: feature.into(),
            scenario: name.into(),
            status,
            seconds: 1.0,
            page: None,
            reason: None,
            failure: None,
            behaviours: Vec::new(),
            slowest_stand_probe_ms: None,
        }
    }

    fn results(scenarios: Vec<ScenarioResult>, closing_line: &str) -> RunResults {
        RunResults {
            format: FORMAT,
            context: "controller under test: embedded; Kueue v0.19.2".into(),
            closing_line: closing_line.into(),
            seconds: 42.4,
            scenarios,
        }
    }

    #[test]
    fn a_run_with_failures_shows_each_with_its_first_mismatch() {
        let mut failed = scenario("Fault tolerance", "A pod | fails", Status::Failed);
        failed.failure = Some(
            "Step panicked. Captured output: timed out after 5s waiting for it\nmismatches:\n  \
             - .status.phase: expected \"Resetting\", got \"Running\"\ndiff: ..."
                .into(),
        );
        // A results.json written before `failure` was: its first line, from `reason`.
        let mut older = scenario("Deletion", "Gone <for good>", Status::Failed);
        older.reason = Some("the pods remain".into());
        let run = results(
            vec![
                scenario("Phases", "Admitted", Status::Passed),
                failed,
                scenario("Fault tolerance", "A job succeeds", Status::Passed),
                scenario("Phases", "Webhook", Status::Skipped),
                older,
                scenario("Webhook", "Defaults", Status::Skipped),
            ],
            "2 passed, 2 failed, 2 skipped",
        );
        let want = "\
## AppWrapper conformance

❌ **2 passed, 2 failed, 2 skipped** in 42 s

controller under test: embedded; Kueue v0.19.2

| Feature | Verdict | Passed | Failed | Skipped |
|:--|:--|--:|--:|--:|
| Deletion | ❌ failed | 0 | 1 | 0 |
| Fault tolerance | ❌ failed | 1 | 1 | 0 |
| Phases | ✅ passed | 1 | 0 | 1 |
| Webhook | ⏭️ skipped | 0 | 0 | 1 |

### Failed scenarios

| Feature | Scenario | First mismatch |
|:--|:--|:--|
| Deletion | Gone \\<for good\\> | the pods remain |
| Fault tolerance | A pod \\| fails | timed out after 5s waiting for it: .status.phase: expected \"Resetting\", got \"Running\" |

Each failed scenario's page in the report (`scenarios/<namespace>/index.html`) has its whole failure, its timelines, events and logs.
";
        assert_eq!(render("AppWrapper conformance", &run), want);
    }

    #[test]
    fn a_passing_run_has_no_failure_list_and_flaky_ones_a_column() {
        let run = results(
            vec![
                scenario("Phases", "a", Status::Passed),
                scenario("Phases", "b", Status::Flaky),
                scenario("Kueue", "c", Status::Passed),
            ],
            "2 passed, 0 failed, 1 flaky",
        );
        let text = render("Gate", &run);
        assert!(text.starts_with("## Gate\n\n✅ **2 passed, 0 failed, 1 flaky** in 42 s\n"));
        assert!(text.contains(
            "| Feature | Verdict | Passed | Failed | Flaky | Skipped |\n\
             |:--|:--|--:|--:|--:|--:|\n\
             | Kueue | ✅ passed | 1 | 0 | 0 | 0 |\n\
             | Phases | ⚠️ flaky | 1 | 0 | 1 | 0 |\n"
        ));
        assert!(!text.contains("Failed scenarios"), "{text}");
    }

    #[test]
    fn the_behaviours_failed_scenarios_check_are_listed_as_broken() {
        let mut first = scenario("Fault tolerance", "Exit 42", Status::Failed);
        first.behaviours = vec!["FT-EXIT-TERMINAL".into(), "FT-RETRY-LIMIT".into()];
        let mut second = scenario("Deletion", "Kept", Status::Failed);
        second.behaviours = vec!["FT-EXIT-TERMINAL".into()];
        let mut passed = scenario("Phases", "Done", Status::Passed);
        passed.behaviours = vec!["PH-SUCCEEDED".into()];
        let text = render(
            "Gate",
            &results(vec![first, second, passed], "1 passed, 2 failed"),
        );
        assert!(
            text.contains(
                "\n### Broken behaviours\n\n- `FT-EXIT-TERMINAL`: Exit 42; Kept\n- `FT-RETRY-LIMIT`: Exit 42\n"
            ),
            "{text}"
        );
        assert!(!text.contains("PH-SUCCEEDED"), "{text}");
    }

    #[test]
    fn an_empty_run_says_so() {
        let text = render("Gate", &results(Vec::new(), "0 passed, 0 failed"));
        assert!(text.contains("⚠️ **0 passed, 0 failed**"), "{text}");
        assert!(text.ends_with("No scenario ran.\n"), "{text}");
    }

    #[test]
    fn the_failure_list_is_bounded() {
        let scenarios = (0..MAX_FAILED + 3)
            .map(|i| scenario("Phases", &format!("s{i:03}"), Status::Failed))
            .collect();
        let text = render("Gate", &results(scenarios, "0 passed, 53 failed"));
        assert_eq!(text.matches("| Phases | s").count(), MAX_FAILED);
        assert!(text.contains("… and 3 more failed scenarios"), "{text}");
    }
}
