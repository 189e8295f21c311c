//! The phase diagram as SVG, each edge marked by whether the run took it and linked to the
//! list of the scenarios that took it (on the same page, under [`edge_anchor`]).

use std::fmt::Write as _;

use appwrapper_controller::api::Phase;

use super::html::{anchor, escape};
use monitor::EdgeCoverage;

const W: f64 = 60.0; // half width of a phase box
const H: f64 = 20.0; // half height

fn position(phase: Phase) -> (f64, f64) {
    match phase {
        Phase::Empty => (80.0, 70.0),
        Phase::Suspended => (250.0, 70.0),
        Phase::Resuming => (450.0, 70.0),
        Phase::Running => (660.0, 70.0),
        Phase::Succeeded => (860.0, 70.0),
        Phase::Suspending => (250.0, 260.0),
        Phase::Resetting => (450.0, 260.0),
        Phase::Failed => (860.0, 260.0),
        Phase::Terminating => (560.0, 430.0),
        // Never drawn: no edge of the diagram touches it.
        Phase::Unknown => (80.0, 430.0),
    }
}

/// Bend of an edge (perpendicular offset of its control point), to keep edges apart.
fn bend(from: Phase, to: Phase) -> f64 {
    use Phase::*;
    match (from, to) {
        (Resuming, Resetting) | (Resetting, Resuming) => 30.0,
        (Resuming, Failed) => -40.0,
        (Resuming, Terminating) => -70.0,
        (_, Terminating) => 25.0,
        _ => 0.0,
    }
}

/// Where the line from `from`'s centre towards `to` leaves `from`'s box.
fn clip(from: (f64, f64), to: (f64, f64)) -> (f64, f64) {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let sx = if dx.abs() > f64::EPSILON {
        W / dx.abs()
    } else {
        f64::INFINITY
    };
    let sy = if dy.abs() > f64::EPSILON {
        H / dy.abs()
    } else {
        f64::INFINITY
    };
    let s = sx.min(sy).min(1.0);
    (from.0 + dx * s, from.1 + dy * s)
}

/// The `id` of an edge's list of scenarios.
pub fn edge_anchor(from: Phase, to: Phase) -> String {
    format!("edge-{}", anchor(&format!("{from} {to}")))
}

/// The diagram; `edges` gives every edge and how often it was taken.
pub fn svg(edges: &[EdgeCoverage]) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 960 480" width="960" height="480" font-family="sans-serif" font-size="13">
<defs>
  <marker id="seen" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2e7d32"/></marker>
  <marker id="inferred" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#ef6c00"/></marker>
  <marker id="unseen" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c62828"/></marker>
</defs>"##
    );
    for edge in edges.iter().filter(|e| e.in_diagram) {
        let (a, b) = (position(edge.from), position(edge.to));
        let (mx, my) = ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0);
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let k = bend(edge.from, edge.to);
        let control = (mx - dy / len * k, my + dx / len * k);
        let start = clip(a, control);
        let end = clip(b, control);
        let (class, color, dash, width) = if edge.direct > 0 {
            ("seen", "#2e7d32", "", 2.5)
        } else if edge.inferred > 0 {
            ("inferred", "#ef6c00", "6 3", 2.0)
        } else {
            ("unseen", "#c62828", "3 4", 1.5)
        };
        let title = format!(
            "{} → {}: seen {} times{}",
            edge.from,
            edge.to,
            edge.direct,
            if edge.inferred > 0 {
                format!(", inferred {} times", edge.inferred)
            } else {
                String::new()
            }
        );
        let d = format!(
            "M{:.1},{:.1} Q{:.1},{:.1} {:.1},{:.1}",
            start.0, start.1, control.0, control.1, end.0, end.1
        );
        // A wide transparent copy of the edge under it makes it easy to click.
        let _ = writeln!(
            svg,
            r##"<a class="edge-link" href="#{}"><title>{}</title><path d="{d}" fill="none" stroke="transparent" stroke-width="14"/><path class="edge {class}" d="{d}" fill="none" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}" marker-end="url(#{class})"/>"##,
            edge_anchor(edge.from, edge.to),
            escape(&title)
        );
        let label_at = (
            (start.0 + 2.0 * control.0 + end.0) / 4.0,
            (start.1 + 2.0 * control.1 + end.1) / 4.0,
        );
        let label = if edge.direct > 0 {
            edge.direct.to_string()
        } else if edge.inferred > 0 {
            format!("({})", edge.inferred)
        } else {
            "0".into()
        };
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" fill="{color}" font-size="11" text-anchor="middle" dy="-3">{label}</text></a>"#,
            label_at.0, label_at.1
        );
    }
    for phase in Phase::ALL {
        let (x, y) = position(phase);
        let terminal = matches!(phase, Phase::Succeeded | Phase::Failed);
        let _ = writeln!(
            svg,
            r##"<g class="phase"><rect x="{:.0}" y="{:.0}" width="{:.0}" height="{:.0}" rx="8" fill="{}" stroke="#37474f"/><text x="{x:.0}" y="{:.0}" text-anchor="middle">{}</text></g>"##,
            x - W,
            y - H,
            2.0 * W,
            2.0 * H,
            if terminal { "#eceff1" } else { "#ffffff" },
            y + 4.0,
            phase
        );
    }
    let _ = writeln!(
        svg,
        r##"<g font-size="12"><text x="20" y="465" fill="#2e7d32">━ taken (count)</text><text x="170" y="465" fill="#ef6c00">╍ inferred from a skipped state (count)</text><text x="480" y="465" fill="#c62828">┈ not taken</text></g>
</svg>"##
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_edge_is_drawn_and_marked() {
        let edges: Vec<EdgeCoverage> = monitor::graph::EDGES
            .iter()
            .enumerate()
            .map(|(i, &(from, to))| EdgeCoverage {
                from,
                to,
                direct: usize::from(i % 2 == 0),
                inferred: 0,
                namespaces: BTreeSet::new(),
                in_diagram: true,
            })
            .collect();
        let svg = svg(&edges);
        assert_eq!(svg.matches("class=\"edge seen\"").count(), 10);
        assert_eq!(svg.matches("class=\"edge unseen\"").count(), 9);
        assert_eq!(svg.matches("class=\"phase\"").count(), 9);
        assert!(
            svg.contains("Resuming → Running: seen 1 times")
                || svg.contains("Resuming → Running: seen 0 times")
        );
        assert_eq!(svg.matches("<a class=\"edge-link\"").count(), 19);
        assert!(svg.contains("href=\"#edge-resuming-running\""));
    }

    #[test]
    fn clipping_stays_on_the_box() {
        let (x, y) = clip((0.0, 0.0), (200.0, 0.0));
        assert_eq!((x, y), (W, 0.0));
        let (x, y) = clip((0.0, 0.0), (0.0, -100.0));
        assert_eq!((x, y), (0.0, -H));
    }
}
