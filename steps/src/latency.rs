//! How late the stand answers: measured when a run starts, and then once a second for as
//! long as it lasts. Upper bounds of the timing windows carry a slack derived from it, so that
//! a busy machine does not fail a conforming controller, while lower bounds stay exactly where
//! the specification puts them. A window allows for the slowest probe since its moment, so a
//! machine that got busier after the start (a second run beside this one) is allowed for too.
//!
//! A probe is one API read plus one short sleep; what it costs beyond the sleep is the latency
//! of the stand as a controller meets it (the API server's answer, and how late a task is
//! scheduled on a loaded CPU). A controller's timer firing, its reconcile and its status write
//! take a handful of such steps, so the slack is [`FACTOR`] times the slowest probe, rounded
//! up to whole seconds and kept between [`MIN_SLACK`] and [`MAX_SLACK`].

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;

const PROBES: usize = 20;
const SLEEP: Duration = Duration::from_millis(50);
const FACTOR: u32 = 20;
pub const MIN_SLACK: Duration = Duration::from_secs(0);
pub const MAX_SLACK: Duration = Duration::from_secs(10);
/// How often the stand is probed during the run.
const EVERY: Duration = Duration::from_secs(1);
/// Probes older than this are forgotten: no window lasts as long.
const KEEP: Duration = Duration::from_secs(15 * 60);
/// A window also counts the probe just before its moment (they come once a second).
const MARGIN: Duration = Duration::from_secs(2);

static SLACK_MS: AtomicU64 = AtomicU64::new(0);
static PEAK_MS: AtomicU64 = AtomicU64::new(0);

/// The slack measured when the run started (zero until [`calibrate`] ran).
pub fn slack() -> Duration {
    Duration::from_millis(SLACK_MS.load(Ordering::Relaxed))
}

/// The largest slack a window of this run was given so far.
pub fn peak_slack() -> Duration {
    Duration::from_millis(PEAK_MS.load(Ordering::Relaxed)).max(slack())
}

/// The slack for probes whose slowest cost `slowest` beyond their sleep.
pub fn slack_for(slowest: Duration) -> Duration {
    let raw = slowest * FACTOR;
    let whole = Duration::from_secs(raw.as_millis().div_ceil(1000) as u64);
    whole.clamp(MIN_SLACK, MAX_SLACK)
}

/// The slack of a window whose moment was `span` ago: the start's, or more if a probe since
/// then was slower.
pub fn slack_over(span: Duration) -> Duration {
    let slowest = recent()
        .lock()
        .map(|r| r.slowest_since(Instant::now(), span + MARGIN))
        .unwrap_or_default();
    let slack = slack().max(slack_for(slowest));
    PEAK_MS.fetch_max(slack.as_millis() as u64, Ordering::Relaxed);
    slack
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

fn recent() -> &'static Mutex<Recent> {
    static RECENT: Mutex<Recent> = Mutex::new(Recent(VecDeque::new()));
    &RECENT
}

async fn probe(namespaces: &Api<Namespace>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    namespaces.get("default").await?;
    tokio::time::sleep(SLEEP).await;
    Ok(started.elapsed().saturating_sub(SLEEP))
}

/// Measures the stand and sets the slack; returns it and the slowest probe.
pub async fn calibrate(client: &kube::Client) -> anyhow::Result<(Duration, Duration)> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut slowest = Duration::ZERO;
    for _ in 0..PROBES {
        slowest = slowest.max(probe(&namespaces).await?);
    }
    let slack = slack_for(slowest);
    SLACK_MS.store(slack.as_millis() as u64, Ordering::Relaxed);
    Ok((slack, slowest))
}

/// Probes once a second until aborted. A failed read counts as slow as its time to fail.
pub fn keep_probing(client: kube::Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let namespaces: Api<Namespace> = Api::all(client);
        loop {
            let started = Instant::now();
            let cost = probe(&namespaces)
                .await
                .unwrap_or_else(|_| started.elapsed());
            if let Ok(mut recent) = recent().lock() {
                recent.record(Instant::now(), cost);
            }
            tokio::time::sleep(EVERY).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slack_grows_with_the_slowest_probe_in_whole_seconds_within_bounds() {
        assert_eq!(slack_for(Duration::ZERO), Duration::ZERO);
        assert_eq!(slack_for(Duration::from_millis(4)), Duration::from_secs(1));
        assert_eq!(
            slack_for(Duration::from_millis(120)),
            Duration::from_secs(3)
        );
        assert_eq!(slack_for(Duration::from_secs(2)), MAX_SLACK);
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
