//! `specification.html`: every behaviour of the specification with the scenarios of the run
//! that check it and how each went, a verdict per behaviour and a coverage figure per area;
//! then the behaviours no scenario checks (with their reasons) and those that rest on a
//! single scenario, which a gate loses when that one scenario is flaky or skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use maud::{Markup, html};

use super::html::{href, page};
use crate::record::{Report, ScenarioRecord, Skipped};
use crate::status::Status;
use features::spec::{self, Behaviour, ScenarioAt, Specification};

pub const FILE: &str = "specification.html";

/// What the run says of a behaviour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A scenario that checks it failed.
    Broken,
    /// A scenario checked it and none failed.
    Held,
    /// Every scenario that checks it was skipped.
    Skipped,
    /// Scenarios check it, but none was selected for this run.
    NotSelected,
    /// No scenario checks it.
    Unchecked,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Broken => "broken",
            Verdict::Held => "held",
            Verdict::Skipped => "skipped",
            Verdict::NotSelected => "not selected",
            Verdict::Unchecked => "unchecked",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Verdict::Broken => "failed",
            Verdict::Held => "passed",
            _ => "skipped",
        }
    }
}

/// The scenarios of the run that check one behaviour.
#[derive(Default)]
struct Checks<'a> {
    ran: Vec<&'a ScenarioRecord>,
    skipped: Vec<&'a Skipped>,
}

impl Checks<'_> {
    fn verdict(&self, behaviour: &Behaviour, elsewhere: bool) -> Verdict {
        if self.ran.iter().any(|r| r.status() == Status::Failed) {
            Verdict::Broken
        } else if !self.ran.is_empty() {
            Verdict::Held
        } else if !self.skipped.is_empty() {
            Verdict::Skipped
        } else if elsewhere || behaviour.unchecked.is_none() {
            Verdict::NotSelected
        } else {
            Verdict::Unchecked
        }
    }
}

fn checks<'a>(report: &Report<'a>) -> BTreeMap<&'a str, Checks<'a>> {
    let mut by_id: BTreeMap<&str, Checks> = BTreeMap::new();
    for r in report.records {
        for id in spec::behaviour_ids(&r.text.tags) {
            by_id.entry(id).or_default().ran.push(r);
        }
    }
    for s in report.skipped {
        for id in spec::behaviour_ids(&s.text.tags) {
            by_id.entry(id).or_default().skipped.push(s);
        }
    }
    by_id
}

pub fn write(dir: &Path, report: &Report<'_>) -> anyhow::Result<PathBuf> {
    let (built_in, _) = features::load(&features::FeatureSet::BuiltIn);
    let path = dir.join(FILE);
    let text = render(report, spec::built_in(), &spec::by_behaviour(&built_in));
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The page, for `spec` and the built-in scenarios that check each behaviour (`checked_by`).
pub fn render(
    report: &Report<'_>,
    spec: &Specification,
    checked_by: &BTreeMap<String, Vec<ScenarioAt>>,
) -> String {
    let checks = checks(report);
    let none = Checks::default();
    let of = |b: &Behaviour| checks.get(b.id.as_str()).unwrap_or(&none);
    let verdict = |b: &Behaviour| of(b).verdict(b, checked_by.contains_key(&b.id));
    let body = html! {
        h1 { "Specification" }
        p {
            a href="index.html" { "Back to the run" } ". Every behaviour of "
            code { (spec::PATH) } " with the scenarios of this run that check it. "
            "A behaviour is broken when one of them failed, held when one passed and none failed."
        }
        table.areas {
            tr { @for h in ["Area", "Behaviours", "Checked in this run", "Held", "Broken"] { th { (h) } } }
            @for area in &spec.areas {
                @let verdicts: Vec<Verdict> = area.behaviours.iter().map(verdict).collect();
                @let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count();
                tr {
                    td { a href={ "#area-" (area.id) } { (area.title) } }
                    td.n { (area.behaviours.len()) }
                    td.n { (count(Verdict::Held) + count(Verdict::Broken)) }
                    td.n { (count(Verdict::Held)) }
                    td class=(if count(Verdict::Broken) > 0 { "n failed" } else { "n" }) { (count(Verdict::Broken)) }
                }
            }
        }
        @for area in &spec.areas {
            h2 id={ "area-" (area.id) } { (area.title) }
            table.behaviours {
                tr { @for h in ["Behaviour", "Statement", "Verdict", "Scenarios"] { th { (h) } } }
                @for b in &area.behaviours {
                    @let v = verdict(b);
                    tr id=(b.id) {
                        td { code { (b.id) } @if b.extension { br; span.tags { "extension" } } }
                        td { (b.statement) }
                        td class=(v.class()) { (v.as_str()) }
                        td { (scenarios(of(b), b)) }
                    }
                }
            }
        }
        h2 #unchecked { "Behaviours no scenario checks" }
        ul {
            @for (_, b) in spec.behaviours().filter(|(_, b)| !checked_by.contains_key(&b.id)) {
                li { a href={ "#" (b.id) } { code { (b.id) } } ": " (b.unchecked.as_deref().unwrap_or("no reason given")) }
            }
        }
        h2 #single { "Behaviours checked by a single scenario" }
        ul {
            @for (_, b) in spec.behaviours() {
                @if let Some([only]) = checked_by.get(&b.id).map(Vec::as_slice) {
                    li { a href={ "#" (b.id) } { code { (b.id) } } ": " (only.name) }
                }
            }
        }
    };
    page("Specification", body)
}

fn scenarios(checks: &Checks<'_>, behaviour: &Behaviour) -> Markup {
    html! {
        @if checks.ran.is_empty() && checks.skipped.is_empty() {
            @if let Some(reason) = &behaviour.unchecked { (reason) }
        } @else {
            ul.scenarios {
                @for r in &checks.ran {
                    li {
                        a href=(href(&r.page())) { (r.title()) }
                        " " span class=(r.status().as_str()) { (r.status().as_str()) }
                    }
                }
                @for s in &checks.skipped {
                    li { (s.title()) " " span.skipped { "skipped" } ": " (s.reason) }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gherkin::{ScenarioKey, ScenarioText};
    use crate::html::hostile;
    use crate::run_summary::Summary;

    fn text(line: usize, tags: &[&str]) -> ScenarioText {
        ScenarioText {
            key: ScenarioKey {
                file: "features/f.feature".into(),
                line,
            },
            tags: tags.iter().map(|t| t.to_string()).collect(),
            ..ScenarioText::default()
        }
    }

    fn record(line: usize, passed: bool, tags: &[&str]) -> ScenarioRecord {
        ScenarioRecord {
            feature: "F".into(),
            scenario: format!("s{line}"),
            namespace: format!("aw-{line}"),
            passed,
            text: text(line, tags),
            ..ScenarioRecord::default()
        }
    }

    fn spec() -> Specification {
        Specification::parse(&format!(
            "areas:\n  - id: a\n    title: \"Area {}\"\n    behaviours:\n{}",
            hostile::TEXT.replace('"', "\\\""),
            [
                ("A-BROKEN", ""),
                ("A-HELD", ""),
                ("A-SKIPPED", "\n        extension: true"),
                ("A-NOT-SELECTED", ""),
                ("A-UNCHECKED", "\n        unchecked: not observable"),
            ]
            .iter()
            .map(|(id, more)| format!(
                "      - id: {id}\n        statement: It MUST be {id}.{more}\n"
            ))
            .collect::<String>()
        ))
        .unwrap()
    }

    #[test]
    fn each_behaviour_gets_the_verdict_of_its_scenarios() {
        let records = [
            record(3, false, &["behaviour:A-BROKEN"]),
            record(9, true, &["behaviour:A-HELD", "serial"]),
        ];
        let skipped = [Skipped {
            feature: "F".into(),
            scenario: "quick".into(),
            reason: "@extension: beyond the reference".into(),
            text: text(20, &["behaviour:A-SKIPPED"]),
        }];
        let at = |line| ScenarioAt {
            file: "features/f.feature".into(),
            line,
            name: format!("s{line}"),
        };
        let checked_by = BTreeMap::from([
            ("A-BROKEN".to_string(), vec![at(3)]),
            ("A-HELD".to_string(), vec![at(3), at(9)]),
            ("A-SKIPPED".to_string(), vec![at(20)]),
            ("A-NOT-SELECTED".to_string(), vec![at(30)]),
        ]);
        let summary = Summary::default();
        let report = Report {
            summary: &summary,
            records: &records,
            skipped: &skipped,
            coverage: &[],
            context: "test",
        };
        let html = render(&report, &spec(), &checked_by);
        for (id, class, verdict) in [
            ("A-BROKEN", "failed", "broken"),
            ("A-HELD", "passed", "held"),
            ("A-SKIPPED", "skipped", "skipped"),
            ("A-NOT-SELECTED", "skipped", "not selected"),
            ("A-UNCHECKED", "skipped", "unchecked"),
        ] {
            let cell = format!("<td class=\"{class}\">{verdict}</td>");
            let after = html
                .split(&format!("<tr id=\"{id}\">"))
                .nth(1)
                .unwrap_or_else(|| panic!("no row {id}"));
            let its_row = after.split("</tr>").next().unwrap();
            assert!(its_row.contains(&cell), "{id}: {its_row}");
        }
        hostile::assert_escaped(
            &html,
            &[
                format!("Area {}", hostile::ESCAPED),
                "<a href=\"scenarios/aw-3/index.html\">F: s3</a> <span class=\"failed\">failed</span>"
                    .to_string(),
                "F: quick <span class=\"skipped\">skipped</span>: @extension: beyond the reference"
                    .to_string(),
                "<li><a href=\"#A-UNCHECKED\"><code>A-UNCHECKED</code></a>: not observable</li>"
                    .to_string(),
                "<li><a href=\"#A-BROKEN\"><code>A-BROKEN</code></a>: s3</li>".to_string(),
                "<td class=\"n failed\">1</td>".to_string(),
            ],
        );
        assert!(!html.contains("<a href=\"#A-HELD\"><code>A-HELD</code></a>: s"));
    }
}
