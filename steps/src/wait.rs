//! Waiting is polling against a deadline. A check says whether it is done, not yet done (and
//! why: the last state seen), or can never be done; API errors are retried until the deadline
//! and then reported with the last state seen.

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

/// Polls `check` until it is done, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Check<T>>>,
{
    let start = Instant::now();
    let deadline = start + timeout;
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
            let error = last_error
                .map(|e| format!("\nlast API error: {e}"))
                .unwrap_or_default();
            anyhow::bail!(
                "timed out after {}s waiting for {what}{error}\nlast seen:\n{last}",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Polls `check` for all of `duration`; it returns `Some(problem)` as soon as what must hold
/// does not. API errors are tolerated unless every poll fails.
pub async fn always<F, Fut>(duration: Duration, what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<String>>>,
{
    let start = Instant::now();
    let until = start + duration;
    let mut polls = 0usize;
    let mut last_error = None;
    loop {
        match check().await {
            Ok(None) => polls += 1,
            Ok(Some(problem)) => anyhow::bail!(
                "{what} stopped holding after {:.1}s:\n{problem}",
                start.elapsed().as_secs_f64()
            ),
            Err(e) => last_error = Some(format!("{e:#}")),
        }
        if Instant::now() >= until {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    match (polls, last_error) {
        (0, Some(e)) => anyhow::bail!("{what}: the cluster could not be read: {e}"),
        _ => Ok(()),
    }
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
}
