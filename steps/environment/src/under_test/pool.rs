//! Scenarios' own controllers where each is a pod (`in-cluster`): a few at once, each kept
//! from one scenario to the next. Deploying one and deleting it again cost every such scenario
//! a pod's start and end on the cluster's node, about 10 s of the run's critical path.
//!
//! A controller goes back only running and with none of its scenario's AppWrappers left, so
//! the next scenario meets what a fresh one would show it: a controller that reconciles the
//! AppWrappers labelled for it, of which there are none yet.

use std::path::Path;
use std::sync::Mutex;

use tokio::sync::Notify;

use super::ControllerUnderTest;
use crate::places::{Place, Places};

pub struct OwnControllerPods {
    places: Places,
    pods: usize,
    state: Mutex<State>,
    /// A controller was given back or retired.
    returned: Notify,
}

#[derive(Default)]
struct State {
    idle: Vec<ControllerUnderTest>,
    /// Made and not retired: idle, held by a scenario, or warming up.
    live: usize,
    /// Made in all, which numbers their labels.
    made: usize,
}

impl OwnControllerPods {
    /// At most `pods` at once.
    pub fn new(pods: usize) -> Self {
        OwnControllerPods {
            places: Places::new(pods),
            pods,
            state: Mutex::default(),
            returned: Notify::new(),
        }
    }

    /// Up to `count` controllers (no more than its places) for [`Self::warm_up`], made before
    /// any scenario can change the shared controller's settings.
    pub async fn make_ahead(
        &self,
        count: usize,
        shared: &tokio::sync::Mutex<ControllerUnderTest>,
        dir: &Path,
    ) -> Vec<ControllerUnderTest> {
        let mut made = Vec::new();
        for _ in 0..count.min(self.pods) {
            match self.make(shared, dir).await {
                Ok(own) => made.push(own),
                Err(e) => {
                    tracing::warn!("making a scenario's own controller: {e:#}");
                    self.retired();
                }
            }
        }
        made
    }

    /// Starts the controllers [`Self::make_ahead`] made, all at once, each given back as soon
    /// as it runs: the scenarios that get them need not wait for a pod of their own.
    pub async fn warm_up(&self, made: Vec<ControllerUnderTest>, client: &kube::Client) {
        let starts = made.into_iter().map(|mut own| async move {
            match own.start(client).await {
                Ok(()) => self.give_back(own),
                Err(e) => {
                    tracing::warn!("starting a scenario's own controller ahead: {e:#}");
                    self.retire(own).await;
                }
            }
        });
        futures::future::join_all(starts).await;
    }

    /// A place for a scenario expected to take `seconds` and the controller that goes with
    /// it: one an earlier scenario gave back (or one warming up, once it runs), or a new one
    /// of `shared`'s mode and settings (labelled `pool-<n>`, logging into `dir/pool-<n>`) that
    /// its first start deploys.
    pub async fn take(
        &self,
        seconds: f64,
        shared: &tokio::sync::Mutex<ControllerUnderTest>,
        dir: &Path,
    ) -> anyhow::Result<(Place, ControllerUnderTest)> {
        let place = self.places.take(seconds).await;
        loop {
            let all_made = {
                let mut state = lock(&self.state);
                if let Some(own) = state.idle.pop() {
                    return Ok((place, own));
                }
                state.live >= self.pods
            };
            if all_made {
                self.returned.notified().await;
                continue;
            }
            return match self.make(shared, dir).await {
                Ok(own) => Ok((place, own)),
                Err(e) => {
                    self.retired();
                    Err(e)
                }
            };
        }
    }

    async fn make(
        &self,
        shared: &tokio::sync::Mutex<ControllerUnderTest>,
        dir: &Path,
    ) -> anyhow::Result<ControllerUnderTest> {
        let label = {
            let mut state = lock(&self.state);
            state.made += 1;
            state.live += 1;
            format!("pool-{}", state.made)
        };
        shared.lock().await.own(&label, &dir.join(&label))
    }

    /// Keeps `own` for the next scenario; give it back before its place.
    pub fn give_back(&self, own: ControllerUnderTest) {
        lock(&self.state).idle.push(own);
        self.returned.notify_one();
    }

    /// Removes `own` for good: a scenario left it in a state the next one must not meet.
    pub async fn retire(&self, own: ControllerUnderTest) {
        let label = own.own_label().unwrap_or_default().to_owned();
        if let Err(e) = own.remove().await {
            tracing::warn!("removing the own controller {label}: {e:#}");
        }
        self.retired();
    }

    fn retired(&self) {
        lock(&self.state).live -= 1;
        self.returned.notify_one();
    }

    /// Removes every controller given back (at the end of the run), at once.
    pub async fn remove_all(&self) {
        let idle = std::mem::take(&mut lock(&self.state).idle);
        futures::future::join_all(idle.into_iter().map(|own| self.retire(own))).await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ControllerMode;
    use crate::under_test::suite_config;

    fn shared(dir: &Path) -> tokio::sync::Mutex<ControllerUnderTest> {
        let mode = ControllerMode::Process { binary: None };
        let shared = ControllerUnderTest::new(mode, suite_config(), Path::new("/k"), dir)
            .unwrap()
            .shared();
        tokio::sync::Mutex::new(shared)
    }

    /// Whether `taking` has not ended 100 ms on.
    async fn still_waits<T>(taking: impl std::future::Future<Output = T>) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(100), taking)
            .await
            .is_err()
    }

    #[tokio::test]
    async fn a_controller_given_back_serves_the_next_scenario() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let pods = OwnControllerPods::new(2);
        let (place, own) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        assert_eq!(own.own_label(), Some("pool-1"));
        pods.give_back(own);
        drop(place);
        let (_place, own) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        assert_eq!(own.own_label(), Some("pool-1"));
        assert!(dir.path().join("pool-1/controller-config.yaml").exists());
    }

    #[tokio::test]
    async fn scenarios_at_once_get_controllers_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let pods = OwnControllerPods::new(2);
        let (_a, first) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        let (_b, second) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        assert_eq!(first.own_label(), Some("pool-1"));
        assert_eq!(second.own_label(), Some("pool-2"));
    }

    #[tokio::test]
    async fn a_controller_not_given_back_is_made_anew_under_another_label() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let pods = OwnControllerPods::new(1);
        let (place, own) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        pods.retire(own).await;
        drop(place);
        let (_place, own) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        assert_eq!(own.own_label(), Some("pool-2"));
        pods.give_back(own);
        pods.remove_all().await;
        let state = lock(&pods.state);
        assert!(state.idle.is_empty());
        assert_eq!(state.live, 0);
    }

    #[tokio::test]
    async fn a_scenario_waits_for_a_controller_warming_up_rather_than_make_one_more() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let pods = OwnControllerPods::new(1);
        let warming = pods.make(&shared, dir.path()).await.unwrap();
        assert!(
            still_waits(pods.take(1.0, &shared, dir.path())).await,
            "a second controller was made"
        );
        pods.give_back(warming);
        let (_place, own) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        assert_eq!(own.own_label(), Some("pool-1"));
    }

    #[tokio::test]
    async fn no_more_than_its_places_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let pods = OwnControllerPods::new(1);
        let (_held, _own) = pods.take(1.0, &shared, dir.path()).await.unwrap();
        assert!(
            still_waits(pods.take(1.0, &shared, dir.path())).await,
            "a second controller came with one place"
        );
    }
}
