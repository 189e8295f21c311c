//! How late the stand and the controller under test answer: measured when a run starts, and
//! then continually for as long as it lasts. Upper bounds of the timing windows carry a slack
//! derived from it, so that a busy machine does not fail a conforming controller, while lower
//! bounds stay exactly where the specification puts them. A window allows for the slowest
//! probe since its moment, so a machine that got busier after the start (a second run beside
//! this one) is allowed for too.
//!
//! Two probes ([`probes`]):
//! - the stand: one API read plus one short sleep; what it costs beyond the sleep is the
//!   latency of the stand as a controller meets it (the API server's answer, and how late a
//!   task is scheduled on a loaded CPU). A controller's timer firing, its reconcile and its
//!   status write take a handful of such steps, so its slack is [`STAND_FACTOR`] times the
//!   slowest probe;
//! - the controller: a suspended AppWrapper it must move to `Suspended` at once; the time to
//!   that is one whole reaction of the controller (its watch, its queue, its reconcile, its
//!   status write) on the machine as it is, which a stand probe does not see when the
//!   controller's own process is starved. Its slack is [`CONTROLLER_FACTOR`] times the
//!   slowest. A probe that a stop or a start of the controller overlapped, or that began soon
//!   after a start, measures a restart, not a reaction, and is dropped.
//!
//! Both round up to whole seconds and are capped, so that a fault a window exists for is
//! still refused on a quiet machine, where the slack is a second or two.

pub mod probes;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const STAND_FACTOR: u32 = 20;
const CONTROLLER_FACTOR: u32 = 3;
pub const MIN_SLACK: Duration = Duration::from_secs(0);
/// On a quiet machine the slack is a second or two. On a starved one (load 15 to 31 on 2
/// cores) the reference operator and Kueue were seen 20 s past a window whose stand probes
/// cost 0.5 s, and four waits ran out with 30 s of slack whose probes asked for more (the
/// controller's slowest reaction 9 to 17 s, three times that).
pub const MAX_SLACK: Duration = Duration::from_secs(60);
/// Probes older than this are forgotten: no window lasts as long.
const KEEP: Duration = Duration::from_secs(15 * 60);
/// A window also counts the probe just before its moment (they come once a second).
const MARGIN: Duration = Duration::from_secs(2);

static SLACK_MS: AtomicU64 = AtomicU64::new(0);
static PEAK_MS: AtomicU64 = AtomicU64::new(0);
static SLOWEST_REACTION_MS: AtomicU64 = AtomicU64::new(0);

/// The slack measured when the run started (zero until [`probes::calibrate`] ran).
pub fn slack() -> Duration {
    Duration::from_millis(SLACK_MS.load(Ordering::Relaxed))
}

/// The largest slack a window of this run was given so far.
pub fn peak_slack() -> Duration {
    Duration::from_millis(PEAK_MS.load(Ordering::Relaxed)).max(slack())
}

/// The slowest reaction of the controller under test seen in the run.
pub fn slowest_reaction() -> Duration {
    Duration::from_millis(SLOWEST_REACTION_MS.load(Ordering::Relaxed))
}

/// The slack for stand probes whose slowest cost `slowest` beyond their sleep.
pub fn slack_for(slowest: Duration) -> Duration {
    whole_seconds(slowest * STAND_FACTOR).clamp(MIN_SLACK, MAX_SLACK)
}

/// The slack for controller probes whose slowest reaction took `slowest`.
pub fn slack_for_reaction(slowest: Duration) -> Duration {
    whole_seconds(slowest * CONTROLLER_FACTOR).clamp(MIN_SLACK, MAX_SLACK)
}

fn whole_seconds(raw: Duration) -> Duration {
    Duration::from_secs(raw.as_millis().div_ceil(1000) as u64)
}

/// The slack of a window whose moment was `span` ago: the start's, or more if a probe of the
/// stand or of the controller since then was slower.
pub fn slack_over(span: Duration) -> Duration {
    let since = span + MARGIN;
    let now = Instant::now();
    let slowest = |recent: &Mutex<Recent>| {
        recent
            .lock()
            .map(|r| r.slowest_since(now, since))
            .unwrap_or_default()
    };
    let slack = slack()
        .max(slack_for(slowest(stand())))
        .max(slack_for_reaction(slowest(reactions())));
    PEAK_MS.fetch_max(slack.as_millis() as u64, Ordering::Relaxed);
    slack
}

/// The slowest stand probe over the last `span` (and the one just before it): how starved of
/// CPU the machine was then, whatever the controller under test did.
pub fn slowest_stand_probe(span: Duration) -> Duration {
    stand()
        .lock()
        .map(|r| r.slowest_since(Instant::now(), span + MARGIN))
        .unwrap_or_default()
}

/// Probe costs with the time each was taken, oldest first.
#[derive(Default)]
struct Recent(VecDeque<(Instant, Duration)>);

impl Recent {
    fn record(&mut self, at: Instant, cost: Duration) {
        self.0.push_back((at, cost));
        while let Some((first, _)) = self.0.front() {
            if at.duration_since(*first) <= KEEP {
                break;
            }
            self.0.pop_front();
        }
    }

    fn slowest_since(&self, now: Instant, span: Duration) -> Duration {
        let since = now.checked_sub(span).unwrap_or(now);
        self.0
            .iter()
            .rev()
            .take_while(|(at, _)| *at >= since)
            .map(|(_, cost)| *cost)
            .max()
            .unwrap_or_default()
    }
}

fn stand() -> &'static Mutex<Recent> {
    static STAND: Mutex<Recent> = Mutex::new(Recent(VecDeque::new()));
    &STAND
}

fn reactions() -> &'static Mutex<Recent> {
    static REACTIONS: Mutex<Recent> = Mutex::new(Recent(VecDeque::new()));
    &REACTIONS
}

fn record(recent: &Mutex<Recent>, cost: Duration) {
    if let Ok(mut recent) = recent.lock() {
        recent.record(Instant::now(), cost);
    }
}

/// Sets the slack the run starts with, from the slowest of its first stand probes.
fn set_start_slack(slowest: Duration) -> Duration {
    let slack = slack_for(slowest);
    SLACK_MS.store(slack.as_millis() as u64, Ordering::Relaxed);
    slack
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaction_of_the_controller_counts_three_times_within_the_cap() {
        assert_eq!(slack_for_reaction(Duration::ZERO), Duration::ZERO);
        assert_eq!(
            slack_for_reaction(Duration::from_millis(60)),
            Duration::from_secs(1)
        );
        assert_eq!(
            slack_for_reaction(Duration::from_secs(4)),
            Duration::from_secs(12)
        );
        assert_eq!(slack_for_reaction(Duration::from_secs(60)), MAX_SLACK);
        assert_eq!(
            slack_for_reaction(Duration::from_secs(17)),
            Duration::from_secs(51)
        );
    }

    #[test]
    fn the_slack_grows_with_the_slowest_probe_in_whole_seconds_within_bounds() {
        assert_eq!(slack_for(Duration::ZERO), Duration::ZERO);
        assert_eq!(slack_for(Duration::from_millis(4)), Duration::from_secs(1));
        assert_eq!(
            slack_for(Duration::from_millis(120)),
            Duration::from_secs(3)
        );
        assert_eq!(slack_for(Duration::from_secs(4)), MAX_SLACK);
        assert_eq!(
            slack_for(Duration::from_millis(500)),
            Duration::from_secs(10)
        );
    }

    #[test]
    fn a_window_counts_the_probes_since_its_moment_only() {
        let start = Instant::now();
        let mut recent = Recent::default();
        let ms = Duration::from_millis;
        recent.record(start, ms(300));
        recent.record(start + Duration::from_secs(10), ms(20));
        recent.record(start + Duration::from_secs(20), ms(40));
        let now = start + Duration::from_secs(20);
        assert_eq!(recent.slowest_since(now, Duration::from_secs(5)), ms(40));
        assert_eq!(recent.slowest_since(now, Duration::from_secs(10)), ms(40));
        assert_eq!(recent.slowest_since(now, Duration::from_secs(20)), ms(300));
        assert_eq!(
            Recent::default().slowest_since(now, Duration::from_secs(20)),
            Duration::ZERO
        );
    }

    #[test]
    fn old_probes_are_forgotten() {
        let start = Instant::now();
        let mut recent = Recent::default();
        recent.record(start, Duration::from_millis(500));
        recent.record(start + KEEP + Duration::from_secs(1), Duration::ZERO);
        assert_eq!(recent.0.len(), 1);
    }
}
