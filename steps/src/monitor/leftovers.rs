//! Checks that a release kept its promise: once `ResourcesDeployed` or `QuotaReserved`
//! turned False, or the AppWrapper disappeared while deployed, no labelled pod and no wrapped
//! object may remain (spec §4.7, §4.8, §2.2). The decision ([`judge`]) is pure; what exists
//! in the cluster comes through [`Cluster`], which tests replace with a plain function.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use super::rules::Snapshot;
use crate::kube_util;

/// What a state promised about the workload's resources.
#[derive(Clone, Debug, PartialEq)]
pub enum Promise {
    /// These conditions turned False: nothing of the workload remains.
    Released(Vec<&'static str>),
    /// The AppWrapper disappeared while its last known `ResourcesDeployed` was True.
    ///
    /// The reference removes its finalizer (§2.2 step 4) only after deleteComponents reported
    /// complete (§4.7), which takes every component DELETE returning NotFound and no labelled
    /// pod being listed, pods already being deleted included. So at the moment the AppWrapper
    /// goes, nothing of it exists. Anything found afterwards existed then (once the wrapped
    /// objects are gone, nothing recreates a labelled pod), including what the garbage
    /// collector is now deleting because its owner went: a controller that leaves the
    /// deletion to the garbage collector breaks the promise, and such objects are reported,
    /// marked as terminating. The check only reads, so it does not hold the collector up.
    Disappeared,
}

/// A promise to check, and the state that made it.
#[derive(Clone, Debug)]
pub struct Release {
    pub promise: Promise,
    /// The state that made the promise (for a disappearance, the last one known).
    pub state: Snapshot,
    /// The state before, rendered, for the report.
    pub before: Option<String>,
}

/// How many times a lookup that fails is tried before the failure is reported.
pub const ATTEMPTS: usize = 3;

/// What the cluster holds now. Futures are `Send` so that a check can run in a spawned task.
pub trait Cluster {
    /// The labelled pods and the wrapped objects of the AppWrapper of `state` that exist
    /// now, each described in a few words.
    fn leftovers(
        &self,
        state: &Snapshot,
    ) -> impl Future<Output = anyhow::Result<Vec<String>>> + Send;

    /// The AppWrapper with that namespace and name as it is now, `None` when there is none.
    fn appwrapper(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = anyhow::Result<Option<Value>>> + Send;
}

impl Cluster for kube::Client {
    async fn leftovers(&self, state: &Snapshot) -> anyhow::Result<Vec<String>> {
        list_leftovers(self, state).await
    }

    async fn appwrapper(&self, namespace: &str, name: &str) -> anyhow::Result<Option<Value>> {
        kube_util::get_appwrapper(self, namespace, name).await
    }
}

/// Checks the promise of `release`; returns the violation, if any. A lookup that fails is
/// tried [`ATTEMPTS`] times, `pause` apart, and then reported: a check that could not be
/// made is not a pass.
pub async fn check(cluster: &impl Cluster, release: &Release, pause: Duration) -> Option<String> {
    let mut failure = None;
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(pause).await;
        }
        match look(cluster, &release.state).await {
            Ok((left, now)) => return judge(release, &left, now.as_ref()),
            Err(e) => failure = Some(e),
        }
    }
    failure.map(|e| {
        format!(
            "could not check for leftovers after {} ({ATTEMPTS} attempts): {e:#}",
            release.promise
        )
    })
}

/// What is left, and then (only if something is) the AppWrapper as it is now. Read in this
/// order, everything listed existed while the promise held, unless the AppWrapper read shows
/// a later deployment.
async fn look(
    cluster: &impl Cluster,
    state: &Snapshot,
) -> anyhow::Result<(Vec<String>, Option<Value>)> {
    let left = cluster.leftovers(state).await?;
    if left.is_empty() {
        return Ok((left, None));
    }
    let now = cluster.appwrapper(&state.namespace, &state.name).await?;
    Ok((left, now))
}

/// The verdict on a promise, given what is left and the AppWrapper as it is now.
pub fn judge(release: &Release, left: &[String], now: Option<&Value>) -> Option<String> {
    if left.is_empty() || !still_promised(release, now) {
        return None;
    }
    Some(format!(
        "{} while these still exist: {}",
        release.promise,
        left.join(", ")
    ))
}

/// Whether the promise still stands: otherwise what was found may be a later deployment's
/// (the AppWrapper deployed again, or a new AppWrapper of the same name labels its pods the
/// same way), and the check is inconclusive.
fn still_promised(release: &Release, now: Option<&Value>) -> bool {
    let Some(now) = now else {
        return true;
    };
    match &release.promise {
        Promise::Disappeared => false,
        Promise::Released(conditions) => {
            now["metadata"]["uid"] == release.state.uid.as_str()
                && conditions.iter().all(|c| {
                    let current = kube_util::condition(now, c);
                    current.is_some_and(|cur| cur["status"] == "False")
                        && current.and_then(|cur| cur["lastTransitionTime"].as_str())
                            == release.state.transition_time_of(c)
                })
        }
    }
}

impl std::fmt::Display for Promise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Promise::Released(conditions) => write!(f, "{} turned False", conditions.join(" and ")),
            Promise::Disappeared => {
                f.write_str("the AppWrapper disappeared with ResourcesDeployed True")
            }
        }
    }
}

/// The labelled pods, and the wrapped objects named in the status of `state` that exist now
/// with the AppWrapper as their controller (an object that only has a component's name is
/// not the workload's).
/// A kind the API server does not serve has no objects.
pub async fn list_leftovers(
    client: &kube::Client,
    state: &Snapshot,
) -> anyhow::Result<Vec<String>> {
    let (ns, name) = (&state.namespace, &state.name);
    let mut left: Vec<String> = kube_util::pods_of(client, ns, name)
        .await?
        .iter()
        .map(|p| {
            format!(
                "pod {} ({}{})",
                p.metadata.name.as_deref().unwrap_or_default(),
                kube_util::pod_phase(p),
                terminating(p.metadata.deletion_timestamp.is_some())
            )
        })
        .collect();
    for (api_version, kind, object) in &state.components {
        match kube_util::get_object(client, ns, api_version, kind, object).await {
            Ok(Some(found)) if kube_util::controlled_by(&found, name) => left.push(format!(
                "{kind} {object}{}",
                terminating(!found["metadata"]["deletionTimestamp"].is_null())
            )),
            Ok(_) => {}
            Err(e) if unserved_kind(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(left)
}

fn terminating(yes: bool) -> &'static str {
    if yes { ", terminating" } else { "" }
}

/// A 404 from discovery (the group or version is not served) or a kind missing from its group.
/// Reading an object that does not exist is not an error, so any 404 comes from discovery.
fn unserved_kind(e: &anyhow::Error) -> bool {
    use kube::error::DiscoveryError;
    e.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<kube::Error>(),
            Some(kube::Error::Api(status)) if status.code == 404
        ) || matches!(
            cause.downcast_ref::<kube::Error>(),
            Some(kube::Error::Discovery(DiscoveryError::MissingKind(_)))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    const LTT: &str = "2026-01-01T00:00:00Z";

    fn aw(uid: &str, rd: &str, ltt: &str) -> Value {
        json!({
            "metadata": {"name": "aw", "namespace": "ns", "uid": uid},
            "status": {"phase": "Suspended", "conditions": [
                {"type": "ResourcesDeployed", "status": rd, "reason": "R", "lastTransitionTime": ltt},
                {"type": "QuotaReserved", "status": "False", "reason": "R", "lastTransitionTime": ltt},
            ]},
        })
    }

    fn release(promise: Promise) -> Release {
        Release {
            promise,
            state: Snapshot::from_object(&aw("u", "False", LTT)).unwrap(),
            before: None,
        }
    }

    fn released() -> Release {
        release(Promise::Released(vec!["ResourcesDeployed"]))
    }

    fn pod() -> Vec<String> {
        vec!["pod p (Running)".to_string()]
    }

    #[test]
    fn nothing_left_keeps_every_promise() {
        for promise in [
            Promise::Released(vec!["QuotaReserved"]),
            Promise::Disappeared,
        ] {
            assert_eq!(judge(&release(promise), &[], None), None);
        }
    }

    #[test]
    fn a_leftover_after_a_release_is_a_violation() {
        let now = aw("u", "False", LTT);
        let found = judge(&released(), &pod(), Some(&now));
        assert_eq!(
            found.as_deref(),
            Some("ResourcesDeployed turned False while these still exist: pod p (Running)")
        );
        let gone = judge(&released(), &pod(), None);
        assert!(gone.is_some());
    }

    #[test]
    fn a_leftover_after_a_quota_release_is_a_violation() {
        let quota = release(Promise::Released(vec!["QuotaReserved"]));
        let found = judge(&quota, &pod(), Some(&aw("u", "True", LTT)));
        assert!(found.is_some_and(|m| m.starts_with("QuotaReserved turned False")));
    }

    #[test]
    fn a_later_deployment_makes_a_release_check_inconclusive() {
        let deployed_again = aw("u", "True", "2026-01-01T00:01:00Z");
        let released_again = aw("u", "False", "2026-01-01T00:01:00Z");
        let recreated = aw("other", "False", LTT);
        for now in [deployed_again, released_again, recreated] {
            assert_eq!(judge(&released(), &pod(), Some(&now)), None, "{now}");
        }
    }

    #[test]
    fn a_leftover_after_a_disappearance_is_a_violation() {
        let gone = release(Promise::Disappeared);
        let left = vec!["pod p (Running, terminating)".to_string()];
        let found = judge(&gone, &left, None);
        assert!(
            found.as_deref().is_some_and(|m| m.starts_with(
                "the AppWrapper disappeared with ResourcesDeployed True while these still exist: pod p (Running, terminating)"
            )),
            "{found:?}"
        );
        let same_name_again = aw("other", "True", LTT);
        assert_eq!(judge(&gone, &left, Some(&same_name_again)), None);
    }

    #[test]
    fn only_an_unserved_kind_reads_as_no_object() {
        use anyhow::Context as _;
        let api = |code| {
            Err::<(), _>(kube::Error::Api(
                kube::core::Status::failure("m", "r")
                    .with_code(code)
                    .boxed(),
            ))
            .context("discovering example.com/v1 Thing")
            .unwrap_err()
        };
        let missing_kind = Err::<(), _>(kube::Error::Discovery(
            kube::error::DiscoveryError::MissingKind("Thing".into()),
        ))
        .context("reading Thing ns/t")
        .unwrap_err();
        assert!(unserved_kind(&api(404)));
        assert!(unserved_kind(&missing_kind));
        assert!(!unserved_kind(&api(500)));
        assert!(!unserved_kind(&api(403)));
        assert!(!unserved_kind(&anyhow::anyhow!("connection refused")));
    }

    /// Answers from a list, one per call; an `Err` answer is an API error.
    struct Scripted {
        leftovers: Mutex<Vec<Result<Vec<String>, String>>>,
        appwrapper: Option<Value>,
    }

    impl Scripted {
        fn new(mut answers: Vec<Result<Vec<String>, String>>) -> Scripted {
            answers.reverse();
            Scripted {
                leftovers: Mutex::new(answers),
                appwrapper: None,
            }
        }

        fn calls_left(&self) -> usize {
            self.leftovers.lock().unwrap().len()
        }
    }

    impl Cluster for Scripted {
        async fn leftovers(&self, _: &Snapshot) -> anyhow::Result<Vec<String>> {
            let next = self.leftovers.lock().unwrap().pop();
            next.expect("no more answers").map_err(anyhow::Error::msg)
        }

        async fn appwrapper(&self, _: &str, _: &str) -> anyhow::Result<Option<Value>> {
            Ok(self.appwrapper.clone())
        }
    }

    #[tokio::test]
    async fn an_api_error_is_reported_not_taken_as_a_pass() {
        let cluster = Scripted::new(vec![Err("connection refused".into()); ATTEMPTS]);
        let found = check(&cluster, &released(), Duration::ZERO).await;
        assert!(
            found.as_deref().is_some_and(|m| m
                .starts_with("could not check for leftovers after ResourcesDeployed turned False")
                && m.contains("connection refused")),
            "{found:?}"
        );
        assert_eq!(cluster.calls_left(), 0);
    }

    #[tokio::test]
    async fn a_transient_api_error_is_retried() {
        let cluster = Scripted::new(vec![Err("timeout".into()), Ok(vec![])]);
        assert_eq!(check(&cluster, &released(), Duration::ZERO).await, None);
        let cluster = Scripted::new(vec![Err("timeout".into()), Ok(pod())]);
        let found = check(&cluster, &released(), Duration::ZERO).await;
        assert!(found.is_some_and(|m| m.contains("pod p")));
    }

    #[tokio::test]
    async fn a_check_reads_the_appwrapper_to_tell_a_later_deployment() {
        let mut cluster = Scripted::new(vec![Ok(pod())]);
        cluster.appwrapper = Some(aw("u", "True", "2026-01-01T00:01:00Z"));
        assert_eq!(check(&cluster, &released(), Duration::ZERO).await, None);
    }
}
