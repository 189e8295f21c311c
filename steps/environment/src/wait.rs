//! Waiting is polling against a deadline. A check says whether it is done, not yet done (and
//! why: the last state seen), or can never be done; API errors are retried until the deadline
//! and then reported with the last state seen.
//!
//! An assertion without a deadline reads the state once: a state that was wrong and came back
//! must not pass because the step happened to poll at the right moment.
//!
//! A deadline is an upper bound, and like the late side of a timing window it carries the slack
//! of a stand that was measurably slow while the step waited ([`crate::latency`]): on a quiet
//! machine none, on a busy one a few seconds.

use std::future::Future;
use std::time::{Duration, Instant};

pub const POLL: Duration = Duration::from_millis(200);

/// One look at the cluster.
pub enum Check<T> {
    Done(T),
    /// Not yet; the text describes what was seen (the last object, a diff...).
    NotYet(String),
    /// It cannot happen any more (for example: a terminal phase other than the one awaited).
    Never(String),
}

/// How long an assertion may wait for the state it describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patience {
    /// Read the state once, as the previous step left it.
    Now,
    /// The state is reached asynchronously: poll until it holds, for at most this long.
    Within(Duration),
}

/// How long an API error may keep a single read from happening.
const READ_RETRY: Duration = Duration::from_secs(5);

/// Checks once (`Patience::Now`) or until done (`Patience::Within`).
pub async fn expect<T, F, Fut>(patience: Patience, what: &str, check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Check<T>>>,
{
    match patience {
        Patience::Now => once(what, check).await,
        Patience::Within(timeout) => eventually(timeout, what, check).await,
    }
}

/// Checks once: the first answer decides. An API error is no answer, and is retried for a
/// few seconds.
pub async fn once<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Check<T>>>,
{
    let deadline = Instant::now() + READ_RETRY;
    loop {
        match check().await {
            Ok(Check::Done(value)) => return Ok(value),
            Ok(Check::NotYet(seen) | Check::Never(seen)) => anyhow::bail!(
                "expected {what}, but it is not so (read once; a state reached asynchronously \
                 needs `within N seconds`):\n{seen}"
            ),
            Err(e) if Instant::now() >= deadline => {
                return Err(e.context(format!("{what}: the cluster could not be read")));
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// Polls `check` until it is done, for at most `timeout` plus the slack of a slow stand.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Check<T>>>,
{
    poll_until(timeout, crate::latency::slack_over, what, check).await
}

/// [`eventually`] with the slack for a span of `timeout` taken from `slack_over`, asked once
/// the deadline has come.
async fn poll_until<T, F, Fut>(
    timeout: Duration,
    slack_over: impl Fn(Duration) -> Duration,
    what: &str,
    mut check: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Check<T>>>,
{
    let start = Instant::now();
    let mut deadline = start + timeout;
    let mut slack: Option<Duration> = None;
    let mut last = String::from("(nothing observed)");
    let mut last_error: Option<String> = None;
    loop {
        match check().await {
            Ok(Check::Done(value)) => return Ok(value),
            Ok(Check::NotYet(seen)) => last = seen,
            Ok(Check::Never(why)) => anyhow::bail!(
                "{what}: cannot happen any more after {:.1}s:\n{why}",
                start.elapsed().as_secs_f64()
            ),
            Err(e) => last_error = Some(format!("{e:#}")),
        }
        if Instant::now() >= deadline {
            if slack.is_none() {
                let extra = slack_over(timeout);
                slack = Some(extra);
                if !extra.is_zero() {
                    deadline += extra;
                    continue;
                }
            }
            let error = last_error
                .map(|e| format!("\nlast API error: {e}"))
                .unwrap_or_default();
            let allowed = match slack.unwrap_or_default().as_secs() {
                0 => String::new(),
                extra => format!(" (and {extra}s more for a slow stand or controller)"),
            };
            anyhow::bail!(
                "timed out after {}s{allowed} waiting for {what}{error}\nlast seen:\n{last}",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Polls `check` for all of `duration`; it returns `Some(problem)` as soon as what must hold
/// does not. Every poll must read the cluster: a read that fails is tried again, and when the
/// cluster cannot be read for [`READ_RETRY`] the step fails, since what happened meanwhile is
/// unknown.
pub async fn always<F, Fut>(duration: Duration, what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<String>>>,
{
    let start = Instant::now();
    let until = start + duration;
    let mut unread_since: Option<Instant> = None;
    loop {
        match check().await {
            Ok(None) => unread_since = None,
            Ok(Some(problem)) => anyhow::bail!(
                "{what} stopped holding after {:.1}s:\n{problem}",
                start.elapsed().as_secs_f64()
            ),
            Err(e) => {
                let since = *unread_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= READ_RETRY {
                    anyhow::bail!(
                        "{what}: the cluster could not be read for {:.1}s, {:.1}s in: {e:#}",
                        since.elapsed().as_secs_f64(),
                        since.duration_since(start).as_secs_f64()
                    );
                }
            }
        }
        if Instant::now() >= until && unread_since.is_none() {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn eventually_returns_when_done_and_explains_a_timeout() {
        let mut n = 0;
        let value = eventually(Duration::from_secs(5), "n to reach 2", || {
            n += 1;
            let n = n;
            async move {
                Ok(if n >= 2 {
                    Check::Done(n)
                } else {
                    Check::NotYet(format!("n={n}"))
                })
            }
        })
        .await
        .unwrap();
        assert_eq!(value, 2);
        let err = eventually::<(), _, _>(Duration::from_millis(300), "never", || async {
            Ok(Check::NotYet("still 0".into()))
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("waiting for never") && err.contains("still 0"),
            "{err}"
        );
        let err = eventually::<(), _, _>(Duration::from_secs(5), "x", || async {
            Ok(Check::Never("terminal".into()))
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("cannot happen any more"), "{err}");
    }

    /// A check that answers from a script of observations, one per call (the last repeats).
    fn script(
        seen: &[Option<&str>],
    ) -> impl FnMut() -> std::future::Ready<anyhow::Result<Check<()>>> {
        let seen: Vec<Option<String>> = seen.iter().map(|s| s.map(str::to_string)).collect();
        let mut calls = 0;
        move || {
            let next = seen[calls.min(seen.len() - 1)].clone();
            calls += 1;
            std::future::ready(Ok(match next {
                None => Check::Done(()),
                Some(diff) => Check::NotYet(diff),
            }))
        }
    }

    #[tokio::test]
    async fn now_reads_once_where_within_waits() {
        let wrong_then_right = [Some("phase: Running"), None];
        let err = expect(Patience::Now, "phase Resetting", script(&wrong_then_right))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("phase: Running") && err.contains("read once"),
            "{err}"
        );
        expect(
            Patience::Within(Duration::from_secs(5)),
            "phase Resetting",
            script(&wrong_then_right),
        )
        .await
        .unwrap();
        expect(Patience::Now, "phase Resetting", script(&[None]))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn once_retries_an_api_error_then_takes_the_first_answer() {
        let mut calls = 0;
        let err = once::<(), _, _>("x", || {
            calls += 1;
            let first = calls == 1;
            async move {
                if first {
                    anyhow::bail!("connection refused")
                }
                Ok(Check::NotYet("seen".into()))
            }
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("seen"), "{err}");
        assert_eq!(calls, 2);
    }

    #[tokio::test]
    async fn always_fails_at_the_first_problem() {
        let mut n = 0;
        let err = always(Duration::from_secs(5), "n below 3", || {
            n += 1;
            let n = n;
            async move { Ok((n >= 3).then(|| format!("n={n}"))) }
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("n=3"), "{err}");
        always(Duration::from_millis(300), "fine", || async { Ok(None) })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn always_tolerates_a_read_that_fails_once_but_not_a_cluster_it_cannot_read() {
        let mut n = 0;
        always(Duration::from_millis(600), "flaky reads", || {
            n += 1;
            let n = n;
            async move {
                if n == 2 {
                    anyhow::bail!("connection reset")
                }
                Ok(None)
            }
        })
        .await
        .unwrap();
        let mut n = 0;
        let err = always(Duration::from_millis(300), "one good read", || {
            n += 1;
            let n = n;
            async move {
                if n > 1 {
                    anyhow::bail!("connection refused")
                }
                Ok(None)
            }
        })
        .await
        .unwrap_err()
        .to_string();
        assert!(err.contains("could not be read"), "{err}");
    }

    #[tokio::test]
    async fn a_deadline_carries_the_slack_of_a_slow_stand() {
        let done_after = |at: Duration| {
            let start = Instant::now();
            move || async move {
                Ok(if start.elapsed() >= at {
                    Check::Done(())
                } else {
                    Check::NotYet("not yet".into())
                })
            }
        };
        let late = Duration::from_millis(700);
        let quiet = poll_until(
            Duration::from_millis(300),
            |_| Duration::ZERO,
            "x",
            done_after(late),
        );
        let e = quiet.await.unwrap_err().to_string();
        assert!(e.contains("timed out after 0s waiting for x"), "{e}");
        let busy = poll_until(
            Duration::from_millis(300),
            |_| Duration::from_secs(1),
            "x",
            done_after(late),
        );
        busy.await.unwrap();
        let too_late = poll_until(
            Duration::from_millis(100),
            |_| Duration::from_millis(200),
            "x",
            done_after(Duration::from_secs(2)),
        );
        let e = too_late.await.unwrap_err().to_string();
        assert!(
            !e.contains("more for a slow stand"),
            "whole seconds only: {e}"
        );
    }
}
