//! What every page of the report shares: the page around a body, its style sheet (inline: the
//! pages are opened from disk and fetch nothing), anchors and links, and the escaping of the
//! SVG drawings, which are written as text rather than with `maud`.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::status::Status;

/// Text for the SVG drawings, in element content and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What an `href` keeps as it is: the unreserved characters of RFC 3986 and `/`.
const HREF_KEEPS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// A relative path made into an `href`: each segment percent-encoded where a URL needs it.
pub fn href(path: &str) -> String {
    utf8_percent_encode(path, HREF_KEEPS).to_string()
}

/// An `id` for an anchor: letters and digits, other runs of characters as one `-`.
pub fn anchor(text: &str) -> String {
    let mut id = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') {
            id.push('-');
        }
    }
    id.trim_matches('-').to_string()
}

const STYLE: &str = r#"
body { font-family: sans-serif; margin: 2em; color: #212121; max-width: 1200px; }
a { color: #1565c0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { border: 1px solid #cfd8dc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eceff1; }
td.n { text-align: right; }
pre { white-space: pre-wrap; margin: 0; font-size: 12px; }
.passed, .pass { color: #2e7d32; font-weight: bold; }
.failed, .fail { color: #c62828; font-weight: bold; }
.flaky { color: #ef6c00; font-weight: bold; }
.skipped { color: #607d8b; font-weight: bold; }
ol.steps { list-style: none; padding-left: 0; font-family: monospace; font-size: 13px; }
ol.steps li { margin: 2px 0; padding: 2px 6px; border-left: 4px solid #cfd8dc; }
ol.steps li.step-passed { border-left-color: #2e7d32; }
ol.steps li.step-failed { border-left-color: #c62828; background: #ffebee; }
ol.steps li.step-skipped { border-left-color: #b0bec5; color: #78909c; }
ol.steps .kw { font-weight: bold; }
ol.steps .no { display: inline-block; min-width: 2.5em; color: #78909c; }
ol.steps .when { float: right; color: #546e7a; }
ol.steps pre, ol.steps table { margin: 4px 0 4px 3em; }
ol.steps pre.error { color: #c62828; }
.tags { color: #6a1b9a; }
ul.scenarios li { margin: 2px 0; }
svg text { font-family: sans-serif; }
table.matrix tr.differs { background: #fff8e1; }
td.absent { color: #b0bec5; }
td.passed a, td.failed a, td.flaky a { color: inherit; }
ul.edges > li { margin: 4px 0; }
ul.edges :target, ul.edges li:target { background: #fff8e1; }
"#;

/// A table cell saying how a scenario went.
pub fn status_cell(status: Status) -> Markup {
    html! { td class=(status.as_str()) { (status.as_str()) } }
}

/// A drawing made by [`super::timeline`] or [`super::phase_diagram`], whose text is escaped
/// where they write it.
pub fn svg(drawing: String) -> Markup {
    PreEscaped(drawing)
}

/// A whole page.
pub fn page(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) }
                // Style sheets are not escaped: `ul.edges > li` is CSS.
                style { (PreEscaped(STYLE)) }
            }
            body { (body) }
        }
    }
    .into_string()
}

/// Hostile text for the pages' tests, and what it must become on a page.
#[cfg(test)]
pub mod hostile {
    pub const TEXT: &str = "<script>\"&'";
    pub const ESCAPED: &str = "&lt;script&gt;&quot;&amp;'";

    /// Every one of `wanted` is on the page, and no tag the hostile text would open.
    pub fn assert_escaped(html: &str, wanted: &[String]) {
        for want in wanted {
            assert!(html.contains(want), "{want} missing from\n{html}");
        }
        assert!(!html.contains("<script"), "{html}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_links_and_anchors_are_made_safe() {
        let cases = [
            (
                escape("a <b> & \"c\" 'd'"),
                "a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;",
            ),
            (
                href("run a/scenarios/aw-1/index.html"),
                "run%20a/scenarios/aw-1/index.html",
            ),
            (href("../r#1/x?.html"), "../r%231/x%3F.html"),
            (href("ü"), "%C3%BC"),
            (anchor("Running → Succeeded"), "running-succeeded"),
            (anchor("  Fault tolerance: a/b "), "fault-tolerance-a-b"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }
}
