//! The timeline of one AppWrapper as inline SVG: its phase and each condition over time, the
//! Events about it and the starts of the scenario's steps, on one axis of seconds since the
//! AppWrapper was created. Hovering a bar, an event or a step shows its details.

use std::fmt::Write as _;

use appwrapper_controller::api::Phase;
use chrono::{DateTime, Utc};

use super::events::EventRecord;
use super::html::escape;
use super::recorder::StepOutcome;
use monitor::history::{AppWrapperHistory, Observation};

const WIDTH: f64 = 1100.0;
const LABELS: f64 = 150.0;
const RIGHT: f64 = 24.0;
const STEP_ROWS: f64 = 3.0;
const STEP_ROW: f64 = 13.0;
const LANE: f64 = 22.0;
const GAP: f64 = 4.0;
const EVENT_ROWS: f64 = 3.0;
const AXIS: f64 = 28.0;
const CHAR: f64 = 6.2;

/// The conditions in the order the spec introduces them; others follow by name.
const CONDITION_ORDER: [&str; 5] = [
    "QuotaReserved",
    "ResourcesDeployed",
    "PodsReady",
    "Unhealthy",
    "DeletingResources",
];

/// The start of a step, numbered as on the page.
#[derive(Clone, Debug)]
pub struct StepMark {
    pub number: usize,
    pub at: DateTime<Utc>,
    pub text: String,
    pub outcome: Option<StepOutcome>,
}

/// A stretch of time over which something kept one value.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment<T> {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub value: T,
}

/// The stretches over which `value` of the observations stayed the same, the last one up to
/// `end` (or to the AppWrapper's disappearance). `None` draws nothing.
pub fn segments<T: PartialEq + Clone>(
    observations: &[Observation],
    end: DateTime<Utc>,
    value: impl Fn(&Observation) -> Option<T>,
) -> Vec<Segment<T>> {
    let mut out: Vec<Segment<T>> = Vec::new();
    let mut open: Option<(DateTime<Utc>, T)> = None;
    let mut close = |open: &mut Option<(DateTime<Utc>, T)>, at: DateTime<Utc>| {
        if let Some((from, value)) = open.take() {
            out.push(Segment {
                from,
                to: at.max(from),
                value,
            });
        }
    };
    let mut ended_at = None;
    for o in observations {
        if o.gone {
            ended_at = Some(o.at);
            break;
        }
        let v = value(o);
        if open.as_ref().map(|(_, current)| current) != v.as_ref() {
            close(&mut open, o.at);
            open = v.map(|v| (o.at, v));
        }
    }
    close(&mut open, ended_at.unwrap_or(end));
    out
}

/// The distance between two ticks of an axis `span` seconds long: ten ticks at most.
pub fn tick_step(span: f64) -> f64 {
    const STEPS: [f64; 14] = [
        0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
    ];
    STEPS
        .into_iter()
        .find(|s| span / s <= 10.0)
        .unwrap_or_else(|| (span / 10.0 / 3600.0).ceil() * 3600.0)
}

/// `text` cut to what fits in `width` pixels, or nothing when not even a few letters do.
pub fn fit(text: &str, width: f64) -> Option<String> {
    let room = ((width - 6.0) / CHAR).floor() as usize;
    let count = text.chars().count();
    if count <= room {
        Some(text.to_string())
    } else if room >= 4 {
        Some(text.chars().take(room - 1).collect::<String>() + "…")
    } else {
        None
    }
}

/// The row (of `rows`) on which a label at `x` overlaps no earlier one, or the emptiest.
fn row_for(x: f64, ends: &mut [f64], width: f64) -> usize {
    let row = ends.iter().position(|end| x >= *end).unwrap_or_else(|| {
        ends.iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map_or(0, |(i, _)| i)
    });
    ends[row] = x + width;
    row
}

fn phase_colour(phase: Phase) -> &'static str {
    match phase {
        Phase::Empty | Phase::Unknown => "#eeeeee",
        Phase::Suspended => "#b0bec5",
        Phase::Resuming => "#90caf9",
        Phase::Running => "#81c784",
        Phase::Suspending => "#ffcc80",
        Phase::Resetting => "#ffab91",
        Phase::Succeeded => "#43a047",
        Phase::Failed => "#e57373",
        Phase::Terminating => "#b39ddb",
    }
}

fn status_colour(status: &str) -> &'static str {
    match status {
        "True" => "#a5d6a7",
        "False" => "#cfd8dc",
        _ => "#ffe082",
    }
}

fn outcome_colour(outcome: Option<StepOutcome>) -> &'static str {
    match outcome {
        Some(StepOutcome::Passed) => "#2e7d32",
        Some(StepOutcome::Failed) => "#c62828",
        Some(StepOutcome::Skipped) | None => "#90a4ae",
    }
}

/// The conditions ever observed, in [`CONDITION_ORDER`].
fn condition_kinds(observations: &[Observation]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for o in observations {
        for c in &o.conditions {
            if !kinds.contains(&c.kind) {
                kinds.push(c.kind.clone());
            }
        }
    }
    let rank = |k: &String| {
        CONDITION_ORDER
            .iter()
            .position(|c| c == k)
            .unwrap_or(CONDITION_ORDER.len())
    };
    kinds.sort_by(|a, b| (rank(a), a).cmp(&(rank(b), b)));
    kinds
}

/// Seconds since `origin` ↔ x.
struct Scale {
    origin: DateTime<Utc>,
    from: f64,
    to: f64,
}

impl Scale {
    fn seconds(&self, t: DateTime<Utc>) -> f64 {
        (t - self.origin).num_milliseconds() as f64 / 1000.0
    }

    fn x_of_seconds(&self, s: f64) -> f64 {
        LABELS + (s - self.from) / (self.to - self.from) * (WIDTH - LABELS - RIGHT)
    }

    fn x(&self, t: DateTime<Utc>) -> f64 {
        self.x_of_seconds(self.seconds(t))
    }
}

fn seconds_label(s: f64) -> String {
    if s.fract().abs() > f64::EPSILON {
        format!("{s:.1}s")
    } else {
        format!("{s:.0}s")
    }
}

/// The timeline of `history`; `events` are those about it, `end` when the scenario ended.
pub fn draw(
    history: &AppWrapperHistory,
    steps: &[StepMark],
    events: &[&EventRecord],
    end: DateTime<Utc>,
) -> String {
    let observations = &history.observations;
    let Some(scale) = Scale::spanning(history, steps, events, end) else {
        return String::new();
    };
    let kinds = condition_kinds(observations);
    let lanes_top = STEP_ROWS * STEP_ROW + 6.0;
    let events_top = lanes_top + (1 + kinds.len()) as f64 * (LANE + GAP);
    let axis_top = events_top + EVENT_ROWS * STEP_ROW + 8.0;
    let height = axis_top + AXIS;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-size="11" role="img" aria-label="timeline of AppWrapper {name}">"##,
        name = escape(&history.name)
    );
    draw_axis(&mut svg, &scale, lanes_top, axis_top);
    draw_phase_lane(&mut svg, &scale, observations, end, lanes_top);
    for (i, kind) in kinds.iter().enumerate() {
        let y = lanes_top + (i + 1) as f64 * (LANE + GAP);
        draw_condition_lane(&mut svg, &scale, observations, end, kind, y);
    }
    if let Some(gone) = observations.iter().find(|o| o.gone) {
        let x = scale.x(gone.at);
        let _ = writeln!(
            svg,
            r##"<g class="gone"><line x1="{x:.1}" x2="{x:.1}" y1="{lanes_top:.1}" y2="{events_top:.1}" stroke="#37474f" stroke-width="2"/><title>gone at {}</title></g>"##,
            seconds_label(scale.seconds(gone.at))
        );
    }
    draw_events(&mut svg, &scale, events, events_top);
    draw_steps(&mut svg, &scale, steps, axis_top);
    svg.push_str("</svg>\n");
    svg
}

impl Scale {
    /// From the first to the last of the observations, steps and events (and `end`), with a
    /// little room on both sides; `None` without observations.
    fn spanning(
        history: &AppWrapperHistory,
        steps: &[StepMark],
        events: &[&EventRecord],
        end: DateTime<Utc>,
    ) -> Option<Scale> {
        let origin = history.origin()?;
        let times = history
            .observations
            .iter()
            .map(|o| o.at)
            .chain(steps.iter().map(|s| s.at))
            .chain(events.iter().filter_map(|e| e.first))
            .chain([origin, end]);
        let (mut first, mut last) = (origin, origin);
        for t in times {
            first = first.min(t);
            last = last.max(t);
        }
        let probe = Scale {
            origin,
            from: 0.0,
            to: 1.0,
        };
        let from = probe.seconds(first).min(0.0);
        let to = probe.seconds(last).max(from + 1.0);
        let pad = (to - from) * 0.01;
        Some(Scale {
            origin,
            from: from - pad,
            to: to + pad,
        })
    }

    /// `from → to` of a segment, in seconds since the origin.
    fn span(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> String {
        format!(
            "{} → {}",
            seconds_label(self.seconds(from)),
            seconds_label(self.seconds(to))
        )
    }
}

/// A bar of a lane from `x0` to `x1`, labelled inside when the label fits.
fn draw_bar(
    svg: &mut String,
    class: &str,
    y: f64,
    (x0, x1): (f64, f64),
    fill: &str,
    label: &str,
    title: &str,
) {
    let width = (x1 - x0).max(1.5);
    let _ = write!(
        svg,
        r##"<g class="{class}"><rect x="{x0:.1}" y="{y:.1}" width="{width:.1}" height="{LANE}" fill="{fill}" stroke="#ffffff" stroke-width="0.5"><title>{}</title></rect>"##,
        escape(title)
    );
    if let Some(text) = fit(label, width) {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" pointer-events="none">{}</text>"##,
            x0 + 3.0,
            y + LANE / 2.0 + 4.0,
            escape(&text)
        );
    }
    svg.push_str("</g>\n");
}

fn draw_lane_label(svg: &mut String, y: f64, text: &str) {
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#37474f">{}</text>"##,
        LABELS - 8.0,
        y + LANE / 2.0 + 4.0,
        escape(text)
    );
}

fn draw_phase_lane(
    svg: &mut String,
    scale: &Scale,
    observations: &[Observation],
    end: DateTime<Utc>,
    y: f64,
) {
    draw_lane_label(svg, y, "phase");
    for seg in segments(observations, end, |o| {
        Some((o.phase, o.deleting, o.resetting_count))
    }) {
        let (phase, deleting, resets) = seg.value;
        let title = format!(
            "{phase}{}{}: {}",
            if deleting { " (deleting)" } else { "" },
            if resets > 0 {
                format!(", resettingCount {resets}")
            } else {
                String::new()
            },
            scale.span(seg.from, seg.to)
        );
        draw_bar(
            svg,
            "segment phase",
            y,
            (scale.x(seg.from), scale.x(seg.to)),
            phase_colour(phase),
            &phase.to_string(),
            &title,
        );
    }
}

fn draw_condition_lane(
    svg: &mut String,
    scale: &Scale,
    observations: &[Observation],
    end: DateTime<Utc>,
    kind: &str,
    y: f64,
) {
    draw_lane_label(svg, y, kind);
    for seg in segments(observations, end, |o| o.condition(kind).cloned()) {
        let c = &seg.value;
        let title = format!(
            "{kind}={} reason {}{}: {}",
            c.status,
            c.reason,
            if c.message.is_empty() {
                String::new()
            } else {
                format!(", message: {}", c.message)
            },
            scale.span(seg.from, seg.to)
        );
        draw_bar(
            svg,
            "segment condition",
            y,
            (scale.x(seg.from), scale.x(seg.to)),
            status_colour(&c.status),
            &format!("{} {}", c.status, c.reason),
            &title,
        );
    }
}

/// Each event as a diamond and its reason, on the first free row at its time.
fn draw_events(svg: &mut String, scale: &Scale, events: &[&EventRecord], top: f64) {
    draw_lane_label(svg, top, "events");
    let mut ends = vec![f64::MIN; EVENT_ROWS as usize];
    for e in events {
        let Some(at) = e.first else { continue };
        let x = scale.x(at);
        let width = e.reason.chars().count() as f64 * CHAR + 12.0;
        let row = row_for(x, &mut ends, width) as f64;
        let y = top + row * STEP_ROW + 6.0;
        let colour = if e.type_ == "Warning" {
            "#ef6c00"
        } else {
            "#1565c0"
        };
        let _ = writeln!(
            svg,
            r##"<g class="event"><path d="M{x:.1},{:.1} l4,5 l-4,5 l-4,-5 z" fill="{colour}"/><text x="{:.1}" y="{:.1}" fill="{colour}">{}</text><title>{} (+{}) {}</title></g>"##,
            y - 5.0,
            x + 6.0,
            y + 4.0,
            escape(&e.reason),
            escape(&e.source),
            seconds_label(scale.seconds(at)),
            escape(&e.line())
        );
    }
}

/// Each step as its number at the top and a dashed line down to the axis.
fn draw_steps(svg: &mut String, scale: &Scale, steps: &[StepMark], axis_top: f64) {
    let mut ends = vec![f64::MIN; STEP_ROWS as usize];
    for step in steps {
        let x = scale.x(step.at);
        let label = step.number.to_string();
        let row = row_for(x - 7.0, &mut ends, label.len() as f64 * CHAR + 10.0) as f64;
        let y = 4.0 + row * STEP_ROW;
        let colour = outcome_colour(step.outcome);
        let _ = writeln!(
            svg,
            r##"<g class="step"><line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{axis_top:.1}" stroke="{colour}" stroke-width="1" stroke-dasharray="3 3" opacity="0.7"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="{colour}" font-weight="bold">{label}</text><title>step {label} at {}: {}</title></g>"##,
            y + 2.0,
            y + 9.0,
            seconds_label(scale.seconds(step.at)),
            escape(&step.text)
        );
    }
}

fn draw_axis(svg: &mut String, scale: &Scale, top: f64, axis_top: f64) {
    let step = tick_step(scale.to - scale.from);
    let mut tick = (scale.from / step).ceil() * step;
    let _ = writeln!(
        svg,
        r##"<line x1="{LABELS}" x2="{:.1}" y1="{axis_top:.1}" y2="{axis_top:.1}" stroke="#90a4ae"/>"##,
        WIDTH - RIGHT
    );
    while tick <= scale.to {
        let x = scale.x_of_seconds(tick);
        let origin = tick.abs() < f64::EPSILON;
        let _ = writeln!(
            svg,
            r##"<line class="tick" x1="{x:.1}" x2="{x:.1}" y1="{top:.1}" y2="{:.1}" stroke="{}" stroke-width="{}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#546e7a">{}</text>"##,
            axis_top + 4.0,
            if origin { "#37474f" } else { "#eceff1" },
            if origin { 1.5 } else { 1.0 },
            axis_top + 16.0,
            if origin {
                "0s created".to_string()
            } else {
                seconds_label(tick)
            }
        );
        tick += step;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use monitor::history::ConditionState;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + TimeDelta::seconds(s)
    }

    fn obs(s: i64, phase: Phase, qr: Option<&str>, gone: bool) -> Observation {
        Observation {
            at: at(s),
            phase,
            deleting: gone,
            gone,
            resetting_count: 0,
            conditions: qr
                .map(|status| ConditionState {
                    kind: "QuotaReserved".into(),
                    status: status.into(),
                    reason: "R".into(),
                    message: String::new(),
                })
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn segments_last_until_the_value_changes() {
        use Phase::*;
        let phase = |o: &Observation| Some(o.phase);
        let quota = |o: &Observation| o.condition("QuotaReserved").map(|c| c.status.clone());
        let observations = [
            obs(0, Suspended, None, false),
            obs(2, Suspended, Some("False"), false),
            obs(3, Resuming, Some("True"), false),
            obs(7, Running, Some("True"), false),
        ];
        let got: Vec<(i64, i64, Phase)> = segments(&observations, at(10), phase)
            .iter()
            .map(|s| (s.from.timestamp(), s.to.timestamp(), s.value))
            .collect();
        assert_eq!(
            got,
            vec![(0, 3, Suspended), (3, 7, Resuming), (7, 10, Running)]
        );
        let got: Vec<(i64, i64, String)> = segments(&observations, at(10), quota)
            .into_iter()
            .map(|s| (s.from.timestamp(), s.to.timestamp(), s.value))
            .collect();
        assert_eq!(
            got,
            vec![(2, 3, "False".into()), (3, 10, "True".into())],
            "absent at first: nothing drawn"
        );
        let deleted = [obs(0, Running, None, false), obs(4, Running, None, true)];
        let got: Vec<(i64, i64)> = segments(&deleted, at(10), phase)
            .iter()
            .map(|s| (s.from.timestamp(), s.to.timestamp()))
            .collect();
        assert_eq!(
            got,
            vec![(0, 4)],
            "a gone AppWrapper's bars end when it went"
        );
    }

    #[test]
    fn ticks_and_labels_fit() {
        let ticks = [
            (0.8, 0.5),
            (9.0, 1.0),
            (45.0, 5.0),
            (100.0, 10.0),
            (250.0, 30.0),
            (7200.0, 900.0),
        ];
        for (span, want) in ticks {
            assert_eq!(tick_step(span), want, "span {span}");
        }
        let fits = [
            ("Running", 100.0, Some("Running")),
            ("Running", 40.0, Some("Runn…")),
            ("Running", 20.0, None),
        ];
        for (text, width, want) in fits {
            assert_eq!(fit(text, width).as_deref(), want, "{text} in {width}");
        }
    }

    #[test]
    fn labels_move_to_a_free_row() {
        let mut ends = vec![f64::MIN; 2];
        let rows: Vec<usize> = [0.0, 5.0, 10.0, 100.0]
            .iter()
            .map(|x| row_for(*x, &mut ends, 20.0))
            .collect();
        assert_eq!(rows, vec![0, 1, 0, 0]);
    }

    #[test]
    fn the_drawing_has_a_bar_per_segment_and_a_mark_per_step_and_event() {
        use Phase::*;
        let history = AppWrapperHistory {
            namespace: "ns".into(),
            name: "job".into(),
            uid: "u".into(),
            created: Some(at(0)),
            observations: vec![
                obs(0, Suspended, Some("False"), false),
                obs(1, Resuming, Some("True"), false),
                obs(2, Running, Some("True"), false),
            ],
            dropped: 0,
            last_deployed: None,
        };
        let steps = [StepMark {
            number: 1,
            at: at(-1),
            text: "Given <x>".into(),
            outcome: Some(StepOutcome::Passed),
        }];
        let event = EventRecord {
            kind: "AppWrapper".into(),
            name: "job".into(),
            reason: "Started".into(),
            first: Some(at(1)),
            ..EventRecord::default()
        };
        let svg = draw(&history, &steps, &[&event], at(5));
        assert_eq!(svg.matches("class=\"segment phase\"").count(), 3);
        assert_eq!(svg.matches("class=\"segment condition\"").count(), 2);
        assert_eq!(svg.matches("class=\"step\"").count(), 1);
        assert_eq!(svg.matches("class=\"event\"").count(), 1);
        assert!(svg.contains("Given &lt;x&gt;"));
        assert!(svg.contains("0s created"));
    }
}
