//! Places that only a few scenarios at a time may hold: clusters of their own, controller pods
//! of their own. A place that frees goes to the waiting scenario expected to take longest, so
//! that a long scenario of a later feature does not end the run behind short ones that
//! happened to ask first.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// A fixed number of places.
#[derive(Clone)]
pub struct Places {
    state: Arc<Mutex<State>>,
}

/// One place, held until dropped.
pub struct Place {
    state: Arc<Mutex<State>>,
}

struct State {
    free: usize,
    waiting: Vec<Waiter>,
    asked: u64,
}

struct Waiter {
    seconds: f64,
    asked: u64,
    wake: oneshot::Sender<()>,
}

impl Places {
    pub fn new(places: usize) -> Self {
        Places {
            state: Arc::new(Mutex::new(State {
                free: places,
                waiting: Vec::new(),
                asked: 0,
            })),
        }
    }

    /// A place for a scenario expected to take `seconds`, once one is free and no scenario
    /// expected to take longer waits for it.
    pub async fn take(&self, seconds: f64) -> Place {
        let wake = {
            let mut state = lock(&self.state);
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return self.place();
            }
            let (wake, woken) = oneshot::channel();
            state.asked += 1;
            let asked = state.asked;
            state.waiting.push(Waiter {
                seconds,
                asked,
                wake,
            });
            Woken {
                woken,
                state: Arc::clone(&self.state),
                got: false,
            }
        };
        wake.wait().await;
        self.place()
    }

    fn place(&self) -> Place {
        Place {
            state: Arc::clone(&self.state),
        }
    }
}

/// The receiving end of a waiter: a place handed to a waiter that stopped waiting goes on.
struct Woken {
    woken: oneshot::Receiver<()>,
    state: Arc<Mutex<State>>,
    got: bool,
}

impl Woken {
    async fn wait(mut self) {
        // The sender is dropped only after a send, or with the places themselves.
        let _ = (&mut self.woken).await;
        self.got = true;
    }
}

impl Drop for Woken {
    fn drop(&mut self) {
        if !self.got && self.woken.try_recv().is_ok() {
            hand_on(&self.state);
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        hand_on(&self.state);
    }
}

/// Gives a freed place to the waiter expected to take longest (of those, the first to ask)
/// that still waits, or back to the free ones.
fn hand_on(state: &Mutex<State>) {
    let mut state = lock(state);
    while let Some(next) = (0..state.waiting.len()).max_by(|&a, &b| {
        let (a, b) = (&state.waiting[a], &state.waiting[b]);
        a.seconds.total_cmp(&b.seconds).then(b.asked.cmp(&a.asked))
    }) {
        if state.waiting.swap_remove(next).wake.send(()).is_ok() {
            return;
        }
    }
    state.free += 1;
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Starts a task that takes a place for `seconds` and records its name when it has one.
    fn ask(
        places: &Places,
        name: &'static str,
        seconds: f64,
        got: &Arc<Mutex<Vec<&'static str>>>,
    ) -> tokio::task::JoinHandle<Place> {
        let places = places.clone();
        let got = Arc::clone(got);
        tokio::spawn(async move {
            let place = places.take(seconds).await;
            got.lock().unwrap().push(name);
            place
        })
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn a_freed_place_goes_to_the_longest_waiter_then_to_the_first_to_ask() {
        let places = Places::new(1);
        let got = Arc::default();
        let first = ask(&places, "first", 10.0, &got);
        settle().await;
        let short = ask(&places, "short", 5.0, &got);
        settle().await;
        let long = ask(&places, "long", 50.0, &got);
        settle().await;
        let also_short = ask(&places, "also short", 5.0, &got);
        settle().await;
        assert_eq!(*got.lock().unwrap(), ["first"]);
        drop(first.await.unwrap());
        let long = long.await.unwrap();
        assert_eq!(*got.lock().unwrap(), ["first", "long"]);
        drop(long);
        drop(short.await.unwrap());
        drop(also_short.await.unwrap());
        assert_eq!(
            *got.lock().unwrap(),
            ["first", "long", "short", "also short"]
        );
    }

    #[tokio::test]
    async fn no_more_than_the_places_are_held_and_each_comes_back() {
        let places = Places::new(2);
        let a = places.take(1.0).await;
        let _b = places.take(1.0).await;
        let waiting = tokio::time::timeout(Duration::from_millis(50), places.take(1.0)).await;
        assert!(waiting.is_err(), "a third place was handed out");
        drop(a);
        let c = tokio::time::timeout(Duration::from_secs(1), places.take(1.0)).await;
        assert!(c.is_ok(), "the freed place did not come back");
    }

    #[tokio::test]
    async fn a_place_handed_to_a_waiter_that_gave_up_goes_to_the_next() {
        let places = Places::new(1);
        let held = places.take(1.0).await;
        let got = Arc::default();
        let gave_up = ask(&places, "gave up", 9.0, &got);
        settle().await;
        let next = ask(&places, "next", 1.0, &got);
        settle().await;
        gave_up.abort();
        let _ = gave_up.await;
        drop(held);
        let next = tokio::time::timeout(Duration::from_secs(1), next).await;
        assert!(
            next.is_ok(),
            "the place was lost with the waiter that gave up"
        );
        assert_eq!(*got.lock().unwrap(), ["next"]);
    }
}
