//! Waiting for a state: look, and look again after a pause, until it holds or the time is up.
//! Every wait of this crate goes through [`until`] (or [`blocking_until`] off the runtime).

use std::future::Future;
use std::time::{Duration, Instant};

/// What one look found.
#[derive(Debug, PartialEq, Eq)]
pub enum Look<T> {
    Ready(T),
    /// Not yet: what was seen instead, for the error if the time runs out.
    NotYet(String),
}

/// Looks every `every` until `look` finds the state ready or fails; after `timeout`, the
/// error `timed_out` makes from what the last look saw. A look's own error ends the wait.
pub async fn until<T, E, F, Fut>(
    timeout: Duration,
    every: Duration,
    mut look: F,
    timed_out: impl FnOnce(String) -> E,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Look<T>, E>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match look().await? {
            Look::Ready(value) => return Ok(value),
            Look::NotYet(seen) => seen,
        };
        if Instant::now() >= deadline {
            return Err(timed_out(last));
        }
        tokio::time::sleep(every).await;
    }
}

/// [`until`] for a plain condition on a thread that may block: whether it held in time.
pub fn blocking_until(timeout: Duration, every: Duration, mut holds: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if holds() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    const TICK: Duration = Duration::from_millis(1);

    #[tokio::test]
    async fn it_looks_again_until_the_state_holds() {
        let looks = Cell::new(0);
        let found: Result<u32, String> = until(
            Duration::from_secs(5),
            TICK,
            || async {
                looks.set(looks.get() + 1);
                Ok(if looks.get() == 3 {
                    Look::Ready(7)
                } else {
                    Look::NotYet("not yet".into())
                })
            },
            |last| last,
        )
        .await;
        assert_eq!((found, looks.get()), (Ok(7), 3));
    }

    #[tokio::test]
    async fn on_timeout_the_error_names_what_the_last_look_saw() {
        let looks = Cell::new(0);
        let found: Result<(), String> = until(
            Duration::from_millis(20),
            TICK,
            || async {
                looks.set(looks.get() + 1);
                Ok(Look::NotYet(format!("look {}", looks.get())))
            },
            |last| format!("timed out: {last}"),
        )
        .await;
        assert_eq!(found, Err(format!("timed out: look {}", looks.get())));
        assert!(looks.get() > 1);
    }

    #[tokio::test]
    async fn a_failed_look_ends_the_wait() {
        let found: Result<(), String> = until(
            Duration::from_secs(5),
            TICK,
            || async { Err("refused".to_string()) },
            |_| "timed out".to_string(),
        )
        .await;
        assert_eq!(found, Err("refused".into()));
    }

    #[test]
    fn a_blocking_wait_says_whether_the_condition_held_in_time() {
        let looks = Cell::new(0);
        assert!(blocking_until(Duration::from_secs(5), TICK, || {
            looks.set(looks.get() + 1);
            looks.get() == 2
        }));
        assert!(!blocking_until(Duration::from_millis(10), TICK, || false));
    }
}
