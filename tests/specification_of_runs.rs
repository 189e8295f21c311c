//! The Specification page of real runs, in headless Chromium: our controller's run (the
//! `conformance` test of the first tier, `target/awconf-report`) and the reference operator's
//! (`conformance_reference`, `target/awconf-report/reference`). Every behaviour has its row,
//! none is broken, and the deliberate differences of ours (`extension`) hold on our controller
//! and show as skipped, with the reason, on the reference. Run after those two tests (ci/test
//! runs it last in the second tier).

use std::path::Path;

use conformance_steps::spec;

#[path = "../steps/tests/browser/mod.rs"]
mod browser;

/// The row of behaviour `id` in the page's DOM.
fn row<'a>(dom: &'a str, id: &str) -> &'a str {
    let start = dom
        .find(&format!("<tr id=\"{id}\">"))
        .unwrap_or_else(|| panic!("the Specification page has no row for {id}"));
    let end = dom[start..].find("</tr>").map_or(dom.len(), |e| start + e);
    &dom[start..end]
}

fn check(report: &Path, reference: bool) {
    let page = report.join("specification.html");
    assert!(
        page.is_file(),
        "{} is missing: run `cargo test -p awconf --test {}` first",
        page.display(),
        if reference {
            "conformance_reference --features tier2"
        } else {
            "conformance"
        }
    );
    let dom = browser::dom(&browser::chromium(), &page);
    assert!(
        !dom.contains("<td class=\"failed\">broken</td>"),
        "a behaviour is broken in {}",
        page.display()
    );
    for (_, behaviour) in spec::built_in().behaviours() {
        let row = row(&dom, &behaviour.id);
        if behaviour.unchecked.is_some() {
            assert!(row.contains(">unchecked</td>"), "{row}");
        } else if behaviour.extension && reference {
            assert!(
                row.contains("<td class=\"skipped\">skipped</td>") && row.contains("@extension"),
                "the reference's run should show {} skipped with the reason: {row}",
                behaviour.id
            );
        } else if behaviour.extension {
            assert!(row.contains(">held</td>"), "{row}");
        }
    }
}

#[test]
fn our_controllers_run_shows_every_behaviour_and_breaks_none() {
    check(Path::new("target/awconf-report"), false);
}

#[test]
fn the_references_run_shows_our_extensions_skipped_with_the_reason() {
    check(Path::new("target/awconf-report/reference"), true);
}
