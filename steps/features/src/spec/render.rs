//! The specification as a Markdown page (`spec/README.md`): every behaviour under its area,
//! with the scenarios that check it or the reason none does.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{Counts, ScenarioAt, Specification};

pub fn markdown(spec: &Specification, checked: &BTreeMap<String, Vec<ScenarioAt>>) -> String {
    let mut page = String::new();
    let all = Counts::of(spec.behaviours().map(|(_, b)| b), checked);
    let _ = writeln!(page, "# The AppWrapper controller specification\n");
    let _ = writeln!(
        page,
        "What a conforming AppWrapper controller does, as numbered behaviours, each with the \
         scenarios of `features/` that check it (tag `@behaviour:ID`) or the reason none does. \
         The source is [`behaviours.yaml`](behaviours.yaml); this page is generated from it by \
         `awconf spec --markdown > spec/README.md`, and a test fails when the two differ. \
         `awconf spec ID` shows the scenarios with their lines.\n"
    );
    let _ = writeln!(page, "{all}.\n");
    for area in &spec.areas {
        let counts = Counts::of(&area.behaviours, checked);
        let _ = writeln!(
            page,
            "## {}\n\n{} behaviours, {} checked.\n",
            area.title, counts.behaviours, counts.checked
        );
        for b in &area.behaviours {
            let extension = if b.extension {
                " (extension of ours, beyond the reference operator)"
            } else {
                ""
            };
            let _ = writeln!(page, "### {}{extension}\n\n{}\n", b.id, b.statement);
            match checked.get(&b.id) {
                Some(scenarios) => {
                    let _ = writeln!(page, "Checked by:\n");
                    for s in scenarios {
                        let _ = writeln!(
                            page,
                            "- [{}](../{}): {}",
                            s.file.display(),
                            s.file.display(),
                            s.name
                        );
                    }
                    page.push('\n');
                }
                None => {
                    let reason = b.unchecked.as_deref().unwrap_or("no reason given");
                    let _ = writeln!(page, "Not checked by a scenario: {reason}.\n");
                }
            }
        }
    }
    page.truncate(page.trim_end().len());
    page.push('\n');
    page
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::feature_set::FeatureSet;
    use crate::load::load;
    use crate::spec::{built_in, by_behaviour};

    #[test]
    fn a_behaviour_shows_its_scenarios_or_its_reason() {
        let spec = Specification::parse(
            "areas:\n  - id: a\n    title: Area A\n    behaviours:\n      - id: A-ONE\n        statement: It MUST work.\n      - id: A-TWO\n        statement: It MAY rest.\n        unchecked: not observable\n        extension: true\n",
        )
        .unwrap();
        let checked = BTreeMap::from([(
            "A-ONE".to_string(),
            vec![ScenarioAt {
                file: Path::new("features/a.feature").into(),
                line: 3,
                name: "works".into(),
            }],
        )]);
        let page = markdown(&spec, &checked);
        for text in [
            "2 behaviours: 1 checked by a scenario, 1 with a reason why none does (1 extensions of ours).",
            "## Area A\n\n2 behaviours, 1 checked.",
            "### A-ONE\n\nIt MUST work.\n\nChecked by:\n\n- [features/a.feature](../features/a.feature): works\n",
            "### A-TWO (extension of ours, beyond the reference operator)\n\nIt MAY rest.\n\nNot checked by a scenario: not observable.\n",
        ] {
            assert!(page.contains(text), "{page}\nlacks\n{text}");
        }
    }

    /// spec/README.md is what `awconf spec --markdown` prints today.
    #[test]
    fn the_rendered_page_is_up_to_date() {
        let (features, problems) = load(&FeatureSet::BuiltIn);
        assert!(problems.is_empty(), "{problems:?}");
        let want = markdown(built_in(), &by_behaviour(&features));
        let have = include_str!("../../../../spec/README.md");
        assert!(
            have == want,
            "spec/README.md is out of date: run `cargo run -- spec --markdown > spec/README.md`"
        );
    }
}
