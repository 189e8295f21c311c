//! How late the stand answers, measured once when a run starts: upper bounds of the timing
//! windows carry a slack derived from it, so that a busy machine does not fail a conforming
//! controller, while lower bounds stay exactly where the specification puts them.
//!
//! A probe is one API read plus one short sleep; what it costs beyond the sleep is the latency
//! of the stand as a controller meets it (the API server's answer, and how late a task is
//! scheduled on a loaded CPU). A controller's timer firing, its reconcile and its status write
//! take a handful of such steps, so the slack is [`FACTOR`] times the slowest probe, rounded
//! up to whole seconds and kept between [`MIN_SLACK`] and [`MAX_SLACK`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;

const PROBES: usize = 20;
const SLEEP: Duration = Duration::from_millis(50);
const FACTOR: u32 = 20;
pub const MIN_SLACK: Duration = Duration::from_secs(0);
pub const MAX_SLACK: Duration = Duration::from_secs(10);

static SLACK_MS: AtomicU64 = AtomicU64::new(0);

/// The slack of this run's windows (zero until [`calibrate`] ran).
pub fn slack() -> Duration {
    Duration::from_millis(SLACK_MS.load(Ordering::Relaxed))
}

/// The slack for probes whose slowest cost `slowest` beyond their sleep.
pub fn slack_for(slowest: Duration) -> Duration {
    let raw = slowest * FACTOR;
    let whole = Duration::from_secs(raw.as_millis().div_ceil(1000) as u64);
    whole.clamp(MIN_SLACK, MAX_SLACK)
}

/// Measures the stand and sets the slack; returns it and the slowest probe.
pub async fn calibrate(client: &kube::Client) -> anyhow::Result<(Duration, Duration)> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut slowest = Duration::ZERO;
    for _ in 0..PROBES {
        let started = Instant::now();
        namespaces.get("default").await?;
        tokio::time::sleep(SLEEP).await;
        slowest = slowest.max(started.elapsed().saturating_sub(SLEEP));
    }
    let slack = slack_for(slowest);
    SLACK_MS.store(slack.as_millis() as u64, Ordering::Relaxed);
    Ok((slack, slowest))
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
}
