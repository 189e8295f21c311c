//! Checks that a release kept its promise: once `ResourcesDeployed` or `QuotaReserved` stopped
//! being True, or the AppWrapper disappeared while deployed, no labelled pod and no wrapped object
//! may remain (spec §4.7, §4.8, §2.2). The decisions ([`belongs`], [`compare`], [`judge`])
//! are pure; what exists in the cluster comes through [`Cluster`], which tests replace with a
//! scripted one.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use appwrapper_controller::api::KIND;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

use super::findings::NOT_CHECKED;
use super::rules::{ComponentRef, Snapshot};

/// What a state promised about the workload's resources.
#[derive(Clone, Debug, PartialEq)]
pub enum Promise {
    /// These conditions stopped being True: nothing of the workload remains.
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
    /// The AppWrapper disappeared while its last known `ResourcesDeployed` was True, and the
    /// API server removed it past its finalizer ([`Snapshot::removed_past_finalizer`]): the
    /// controller had no deletion to run. The garbage collector deletes what the AppWrapper
    /// owns; an object with no owner reference to it is never deleted, and is reported.
    RemovedPastFinalizer,
}

/// Every component an AppWrapper's status named in the states the monitor saw of it, and
/// whether one of those states called it deployed. A controller that renames or drops a
/// component in its status does not make the monitor forget it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Components(BTreeMap<ComponentRef, bool>);

impl Components {
    pub fn remember(&mut self, state: &Snapshot) {
        for c in &state.components {
            *self.0.entry(c.object.clone()).or_default() |= c.deployed;
        }
    }

    /// Each component, with whether it was ever called deployed.
    pub fn iter(&self) -> impl Iterator<Item = (&ComponentRef, bool)> {
        self.0.iter().map(|(c, &deployed)| (c, deployed))
    }
}

/// A promise to check, and the state that made it.
#[derive(Clone, Debug)]
pub struct Release {
    pub promise: Promise,
    /// The state that made the promise (for a disappearance, the last one known).
    pub state: Snapshot,
    /// The components of the AppWrapper over every state seen, up to this one.
    pub components: Components,
    /// The state before, rendered, for the report.
    pub before: Option<String>,
}

/// Something of the workload that exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// One of its owner references names the AppWrapper, so that the garbage collector
    /// deletes it once the AppWrapper is gone.
    pub owned: bool,
    /// How it is doing (a pod's phase, being deleted); not part of what it is.
    pub notes: Vec<String>,
}

impl Leftover {
    /// `object`, of the AppWrapper whose uid is `owner`.
    pub(crate) fn of(kind: &str, object: &Value, owner: &str, mut notes: Vec<String>) -> Leftover {
        let meta = &object["metadata"];
        if !meta["deletionTimestamp"].is_null() {
            notes.push("terminating".into());
        }
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let owned = meta["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|o| o["uid"] == owner);
        Leftover {
            kind: kind.into(),
            name: text(&meta["name"]),
            uid: text(&meta["uid"]),
            owned,
            notes,
        }
    }

    fn of_pod(pod: &Pod, owner: &str) -> Leftover {
        let phase = objects::pod_phase(pod).to_string();
        Leftover::of("Pod", &objects::to_value(pod), owner, vec![phase])
    }

    /// The same object (a namesake created after this one was deleted is another).
    fn is(&self, other: &Leftover) -> bool {
        (&self.kind, &self.name, &self.uid) == (&other.kind, &other.name, &other.uid)
    }
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)?;
        if !self.notes.is_empty() {
            write!(f, " ({})", self.notes.join(", "))?;
        }
        Ok(())
    }
}

/// How many times a lookup that fails is tried before the failure is reported.
pub const ATTEMPTS: usize = 3;

/// How many times, at most, the leftovers are read for one check (see [`check`]).
pub const READS: usize = 3;

/// What the cluster holds now. Futures are `Send` so that a check can run in a spawned task.
pub trait Cluster {
    /// The labelled pods and the wrapped objects of the workload of `release` that exist now.
    fn leftovers(
        &self,
        release: &Release,
    ) -> impl Future<Output = anyhow::Result<Vec<Leftover>>> + Send;

    /// The AppWrapper with that namespace and name as it is now, `None` when there is none.
    fn appwrapper(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = anyhow::Result<Option<Value>>> + Send;
}

impl Cluster for kube::Client {
    async fn leftovers(&self, release: &Release) -> anyhow::Result<Vec<Leftover>> {
        list_leftovers(self, release).await
    }

    async fn appwrapper(&self, namespace: &str, name: &str) -> anyhow::Result<Option<Value>> {
        objects::get_appwrapper(self, namespace, name).await
    }
}

/// Checks the promise of `release`; returns the violation, if any.
///
/// The leftovers are read, `pause` apart, until two successive reads agree ([`compare`]): a
/// read that finds nothing is a pass; objects found by two successive reads (the same
/// objects, by uid) are reported, and only those; reads that each find something but never
/// the same object twice (what was found went, and something else appeared) are read again,
/// [`READS`] times at most, and then what the last read found is reported, since every read
/// found the workload's objects. So a lone read is never the verdict, and no answer a
/// controller can give by churning objects makes a pass of a release that left something.
/// Each read that fails is tried [`ATTEMPTS`] times, `pause` apart, and then reported: a
/// check that could not be made is not a pass.
pub async fn check(cluster: &impl Cluster, release: &Release, pause: Duration) -> Option<String> {
    match sample(cluster, release, pause).await {
        Ok(None) => None,
        Ok(Some((left, now))) => judge(release, &left, now.as_ref()),
        Err(e) => Some(format!(
            "{NOT_CHECKED} after {} ({ATTEMPTS} attempts): {e:#}",
            release.promise
        )),
    }
}

/// What two successive reads of the leftovers tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reads {
    /// The later read found nothing.
    Clean,
    /// What both reads found.
    Agree(Vec<Leftover>),
    /// Both found something, but nothing in common.
    Disagree,
}

/// Compares a read with the one before it.
pub fn compare(before: &[Leftover], after: &[Leftover]) -> Reads {
    if after.is_empty() {
        return Reads::Clean;
    }
    let both: Vec<Leftover> = after
        .iter()
        .filter(|a| before.iter().any(|b| b.is(a)))
        .cloned()
        .collect();
    if both.is_empty() {
        Reads::Disagree
    } else {
        Reads::Agree(both)
    }
}

/// What is left once reads agree (`None`: nothing), and then the AppWrapper as it is now.
/// Read in this order, everything reported existed while the promise held, unless the
/// AppWrapper read shows a later deployment.
async fn sample(
    cluster: &impl Cluster,
    release: &Release,
    pause: Duration,
) -> anyhow::Result<Option<(Vec<Leftover>, Option<Value>)>> {
    let mut previous = retried(pause, || cluster.leftovers(release)).await?;
    let mut reads = 1;
    let left = loop {
        if previous.is_empty() {
            return Ok(None);
        }
        tokio::time::sleep(pause).await;
        let next = retried(pause, || cluster.leftovers(release)).await?;
        reads += 1;
        match compare(&previous, &next) {
            Reads::Clean => return Ok(None),
            Reads::Agree(both) => break both,
            Reads::Disagree if reads >= READS => break next,
            Reads::Disagree => previous = next,
        }
    };
    let (ns, name) = (&release.state.namespace, &release.state.name);
    let now = retried(pause, || cluster.appwrapper(ns, name)).await?;
    Ok(Some((left, now)))
}

/// `read`, tried up to [`ATTEMPTS`] times, `pause` apart; the last error if none succeeds.
async fn retried<T, F, Fut>(pause: Duration, mut read: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let mut attempt = 1;
    loop {
        match read().await {
            Ok(value) => return Ok(value),
            Err(e) if attempt >= ATTEMPTS => return Err(e),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// The verdict on a promise, given what is left and the AppWrapper as it is now.
pub fn judge(release: &Release, left: &[Leftover], now: Option<&Value>) -> Option<String> {
    let (left, which) = match release.promise {
        Promise::RemovedPastFinalizer => (
            left.iter().filter(|l| !l.owned).collect::<Vec<_>>(),
            "these, with no owner reference to it,",
        ),
        _ => (left.iter().collect(), "these"),
    };
    if left.is_empty() || !still_promised(release, now) {
        return None;
    }
    let left: Vec<String> = left.iter().map(ToString::to_string).collect();
    Some(format!(
        "{} while {which} still exist: {}",
        release.promise,
        left.join(", ")
    ))
}

/// The verdict on a promise, given what the audit log shows existed when it was written and
/// has been removed since (what it shows as still there is left to a read, [`check`]).
pub fn judge_logged(release: &Release, existed: &[Leftover]) -> Option<String> {
    let existed: Vec<String> = existed
        .iter()
        .filter(|l| release.promise != Promise::RemovedPastFinalizer || !l.owned)
        .map(ToString::to_string)
        .collect();
    if existed.is_empty() {
        return None;
    }
    Some(format!(
        "{} while these existed (the audit log shows them created before that write and \
         removed after it): {}",
        release.promise,
        existed.join(", ")
    ))
}

/// Whether the promise still stands: otherwise what was found may be a later deployment's
/// (the AppWrapper deployed again, or a new AppWrapper of the same name labels its pods the
/// same way), and the check is inconclusive. A released condition still stands while it is
/// not True and its lastTransitionTime has not moved (or it is still absent).
fn still_promised(release: &Release, now: Option<&Value>) -> bool {
    let Some(now) = now else {
        return true;
    };
    match &release.promise {
        Promise::Disappeared | Promise::RemovedPastFinalizer => false,
        Promise::Released(conditions) => {
            now["metadata"]["uid"] == release.state.uid.as_str()
                && conditions.iter().all(|c| {
                    let current = objects::condition(now, c);
                    current.is_none_or(|cur| cur["status"] != "True")
                        && current.and_then(|cur| cur["lastTransitionTime"].as_str())
                            == release.state.transition_time_of(c)
                })
        }
    }
}

impl std::fmt::Display for Promise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Promise::Released(conditions) => {
                write!(f, "{} stopped being True", conditions.join(" and "))
            }
            Promise::Disappeared => {
                f.write_str("the AppWrapper disappeared with ResourcesDeployed True")
            }
            Promise::RemovedPastFinalizer => f.write_str(
                "the API server removed the AppWrapper past its finalizer with ResourcesDeployed \
                 True (kubernetes/kubernetes#77988)",
            ),
        }
    }
}

/// Whether `object`, found under the name of a component of the AppWrapper of `state`, is
/// the workload's. `deployed`: some state of the AppWrapper called that component deployed.
///
/// Owner references alone cannot decide: a wrong controller may create its objects without
/// them, or without `controller: true`. But an object that existed before the AppWrapper is
/// never the workload's (spec §4.6: a name already taken fails the AppWrapper, and nothing
/// adopts the object), and the controller cannot create a component before its AppWrapper.
/// So the object is the workload's when
/// 1. one of its owner references names this AppWrapper's uid, or
/// 2. the AppWrapper called the component deployed (it claimed the object), or
/// 3. it is controlled by no other AppWrapper and was created in a later second than the
///    AppWrapper (creation times have whole seconds).
///
/// Otherwise it predates the AppWrapper, or was created in the same second with nothing tying
/// it to the AppWrapper, or is another AppWrapper's: not reported. Only an object the
/// controller created in the AppWrapper's first second, without an owner reference to it and
/// without ever calling its component deployed, escapes; a pre-existing object ("an object the
/// AppWrapper does not own is never deleted", features/extensions.feature) is never reported.
pub fn belongs(object: &Value, state: &Snapshot, deployed: bool) -> bool {
    let owners: Vec<&Value> = object["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    if owners.iter().any(|o| o["uid"] == state.uid.as_str()) || deployed {
        return true;
    }
    if owners
        .iter()
        .any(|o| o["kind"] == KIND && o["controller"] == true)
    {
        return false;
    }
    let created = object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    match (created, state.created) {
        (Some(object), Some(appwrapper)) => object > appwrapper,
        _ => true,
    }
}

/// The labelled pods, and the objects under the names of the components of `release` that
/// are the workload's ([`belongs`]). A kind the API server does not serve has no objects.
pub async fn list_leftovers(
    client: &kube::Client,
    release: &Release,
) -> anyhow::Result<Vec<Leftover>> {
    let state = &release.state;
    let (ns, name) = (&state.namespace, &state.name);
    let mut left: Vec<Leftover> = objects::pods_of(client, ns, name)
        .await?
        .iter()
        .map(|pod| Leftover::of_pod(pod, &state.uid))
        .collect();
    for (component, deployed) in release.components.iter() {
        let ComponentRef {
            api_version,
            kind,
            name: object,
        } = component;
        match objects::get_object(client, ns, api_version, kind, object).await {
            Ok(Some(found)) if belongs(&found, state, deployed) => {
                let found = Leftover::of(kind, &found, &state.uid, Vec::new());
                // A wrapped Pod is also a labelled one.
                if !left.iter().any(|l| l.is(&found)) {
                    left.push(found);
                }
            }
            Ok(_) => {}
            Err(e) if unserved_kind(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(left)
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
    use rstest::rstest;
    use serde_json::json;
    use std::sync::Mutex;

    const LTT: &str = "2026-01-01T00:00:00Z";

    fn aw(uid: &str, rd: &str, ltt: &str) -> Value {
        json!({
            "metadata": {"name": "aw", "namespace": "ns", "uid": uid, "creationTimestamp": "2026-01-01T00:00:10Z"},
            "status": {"phase": "Suspended", "conditions": [
                {"type": "ResourcesDeployed", "status": rd, "reason": "R", "lastTransitionTime": ltt},
                {"type": "QuotaReserved", "status": "False", "reason": "R", "lastTransitionTime": ltt},
            ]},
        })
    }

    fn state() -> Snapshot {
        Snapshot::from_object(&aw("u", "False", LTT)).unwrap()
    }

    fn release(promise: Promise) -> Release {
        Release {
            promise,
            state: state(),
            components: Components::default(),
            before: None,
        }
    }

    fn released() -> Release {
        release(Promise::Released(vec!["ResourcesDeployed"]))
    }

    fn leftover(kind: &str, name: &str, uid: &str) -> Leftover {
        Leftover {
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            owned: true,
            notes: Vec::new(),
        }
    }

    fn running(name: &str, uid: &str) -> Leftover {
        Leftover {
            notes: vec!["Running".into()],
            ..leftover("Pod", name, uid)
        }
    }

    fn pod() -> Vec<Leftover> {
        vec![running("p", "1")]
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
            Some("ResourcesDeployed stopped being True while these still exist: Pod p (Running)")
        );
        let gone = judge(&released(), &pod(), None);
        assert!(gone.is_some());
    }

    #[test]
    fn a_leftover_after_a_quota_release_is_a_violation() {
        let quota = release(Promise::Released(vec!["QuotaReserved"]));
        let found = judge(&quota, &pod(), Some(&aw("u", "True", LTT)));
        assert!(found.is_some_and(|m| m.starts_with("QuotaReserved stopped being True")));
    }

    /// Negative: a condition removed (not turned False) still promises, as long as it stays
    /// away.
    #[test]
    fn a_leftover_after_a_removed_condition_is_a_violation() {
        let mut removed = state();
        removed.conditions.remove("ResourcesDeployed");
        let release = Release {
            state: removed,
            ..released()
        };
        let mut now = aw("u", "False", LTT);
        now["status"]["conditions"] = json!([]);
        assert!(judge(&release, &pod(), Some(&now)).is_some());
        assert_eq!(judge(&release, &pod(), Some(&aw("u", "True", LTT))), None);
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
        let left = vec![Leftover {
            notes: vec!["Running".into(), "terminating".into()],
            ..leftover("Pod", "p", "1")
        }];
        let found = judge(&gone, &left, None);
        assert!(
            found.as_deref().is_some_and(|m| m.starts_with(
                "the AppWrapper disappeared with ResourcesDeployed True while these still exist: Pod p (Running, terminating)"
            )),
            "{found:?}"
        );
        let same_name_again = aw("other", "True", LTT);
        assert_eq!(judge(&gone, &left, Some(&same_name_again)), None);
    }

    /// Removed past its finalizer, the AppWrapper leaves its objects to the garbage collector:
    /// those it owns are the collector's to delete, those it does not own are left for good.
    #[test]
    fn after_a_removal_past_the_finalizer_only_what_it_does_not_own_is_a_violation() {
        let removed = release(Promise::RemovedPastFinalizer);
        let owned = running("p", "1");
        assert_eq!(judge(&removed, std::slice::from_ref(&owned), None), None);
        let unowned = Leftover {
            owned: false,
            ..leftover("ConfigMap", "c", "2")
        };
        assert_eq!(
            judge(&removed, &[owned, unowned.clone()], None).as_deref(),
            Some(
                "the API server removed the AppWrapper past its finalizer with ResourcesDeployed \
                 True (kubernetes/kubernetes#77988) while these, with no owner reference to it, \
                 still exist: ConfigMap c"
            )
        );
        // A disappearance the controller brought about is judged on everything left.
        let gone = release(Promise::Disappeared);
        assert!(judge(&gone, &[running("p", "1")], None).is_some());
        assert!(judge(&gone, &[unowned], None).is_some());
    }

    #[test]
    fn a_leftover_is_owned_when_an_owner_reference_names_the_appwrapper() {
        let object = |owners: Value| json!({"metadata": {"name": "o", "uid": "1", "ownerReferences": owners}});
        let owner = json!({"kind": KIND, "name": "aw", "uid": "u", "controller": true});
        let other = json!({"kind": KIND, "name": "aw", "uid": "v", "controller": true});
        assert!(Leftover::of("Pod", &object(json!([owner])), "u", Vec::new()).owned);
        assert!(!Leftover::of("Pod", &object(json!([other])), "u", Vec::new()).owned);
        assert!(!Leftover::of("Pod", &json!({"metadata": {"name": "o"}}), "u", Vec::new()).owned);
    }

    #[test]
    fn components_are_remembered_across_states() {
        let named = |name: &str, deployed: &str| {
            Snapshot::from_object(&json!({
                "metadata": {"name": "aw", "namespace": "ns", "uid": "u"},
                "status": {"phase": "Running", "componentStatus": [{"apiVersion": "v1", "kind": "Pod",
                    "name": name, "conditions": [{"type": "ResourcesDeployed", "status": deployed}]}]},
            }))
            .unwrap()
        };
        let mut components = Components::default();
        for s in [
            named("a", "True"),
            named("b", "Unknown"),
            named("a", "False"),
        ] {
            components.remember(&s);
        }
        let seen: Vec<(&str, bool)> = components
            .iter()
            .map(|(c, deployed)| (c.name.as_str(), deployed))
            .collect();
        assert_eq!(seen, vec![("a", true), ("b", false)]);
    }

    fn object(created: &str, owners: Value) -> Value {
        json!({"metadata": {"name": "j", "uid": "o", "creationTimestamp": created, "ownerReferences": owners}})
    }

    fn owner(uid: &str, controller: bool) -> Value {
        json!({"apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper", "name": "aw",
               "uid": uid, "controller": controller})
    }

    /// Negative: objects under a component's name that are the workload's, whatever their
    /// owner references say (the AppWrapper was created at 00:00:10).
    #[rstest]
    #[case::controlled("2026-01-01T00:00:11Z", json!([owner("u", true)]), false)]
    #[case::owned_not_controlled("2026-01-01T00:00:11Z", json!([owner("u", false)]), false)]
    #[case::owned_in_the_same_second("2026-01-01T00:00:10Z", json!([owner("u", false)]), false)]
    #[case::created_later_without_owner("2026-01-01T00:00:11Z", json!(null), false)]
    #[case::created_later_owned_by_another_kind("2026-01-01T00:00:11Z", json!([{"kind": "Job", "uid": "x", "controller": true}]), false)]
    #[case::claimed_in_the_same_second("2026-01-01T00:00:10Z", json!(null), true)]
    #[case::claimed_though_controlled_by_a_namesake("2026-01-01T00:00:10Z", json!([owner("old", true)]), true)]
    #[case::unknown_creation("", json!(null), false)]
    fn the_workloads_objects_belong_to_it(
        #[case] created: &str,
        #[case] owners: Value,
        #[case] deployed: bool,
    ) {
        assert!(belongs(&object(created, owners), &state(), deployed));
    }

    /// Positive: a pre-existing object, or another AppWrapper's, is never the workload's.
    #[rstest]
    #[case::predates("2026-01-01T00:00:09Z", json!(null))]
    #[case::same_second_untied("2026-01-01T00:00:10Z", json!(null))]
    #[case::another_appwrappers("2026-01-01T00:00:11Z", json!([owner("other", true)]))]
    fn foreign_objects_do_not_belong(#[case] created: &str, #[case] owners: Value) {
        assert!(!belongs(&object(created, owners), &state(), false));
    }

    /// What both reads hold (by uid, whatever the notes) has persisted.
    #[rstest]
    #[case::clean(vec![running("p", "1")], vec![], Reads::Clean)]
    #[case::same(vec![running("p", "1")], vec![leftover("Pod", "p", "1")], Reads::Agree(vec![leftover("Pod", "p", "1")]))]
    #[case::only_the_common_part(vec![running("p", "1"), leftover("Job", "j", "2")], vec![leftover("Job", "j", "2"), running("q", "3")], Reads::Agree(vec![leftover("Job", "j", "2")]))]
    #[case::recreated_namesake(vec![running("p", "1")], vec![running("p", "9")], Reads::Disagree)]
    #[case::replaced(vec![running("p", "1")], vec![running("q", "2")], Reads::Disagree)]
    fn successive_reads_are_compared_by_identity(
        #[case] before: Vec<Leftover>,
        #[case] after: Vec<Leftover>,
        #[case] expected: Reads,
    ) {
        assert_eq!(compare(&before, &after), expected);
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
        leftovers: Mutex<Vec<Result<Vec<Leftover>, String>>>,
        appwrapper: Option<Value>,
    }

    impl Scripted {
        fn new(mut answers: Vec<Result<Vec<Leftover>, String>>) -> Scripted {
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
        async fn leftovers(&self, _: &Release) -> anyhow::Result<Vec<Leftover>> {
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
            found.as_deref().is_some_and(|m| m.starts_with(
                "could not check for leftovers after ResourcesDeployed stopped being True"
            ) && m.contains("connection refused")),
            "{found:?}"
        );
        assert_eq!(cluster.calls_left(), 0);
    }

    #[tokio::test]
    async fn a_transient_api_error_is_retried() {
        let cluster = Scripted::new(vec![Err("timeout".into()), Ok(vec![])]);
        assert_eq!(check(&cluster, &released(), Duration::ZERO).await, None);
        let cluster = Scripted::new(vec![Err("timeout".into()), Ok(pod()), Ok(pod())]);
        let found = check(&cluster, &released(), Duration::ZERO).await;
        assert!(found.is_some_and(|m| m.contains("Pod p")));
    }

    #[tokio::test]
    async fn a_check_reads_the_appwrapper_to_tell_a_later_deployment() {
        let mut cluster = Scripted::new(vec![Ok(pod()), Ok(pod())]);
        cluster.appwrapper = Some(aw("u", "True", "2026-01-01T00:01:00Z"));
        assert_eq!(check(&cluster, &released(), Duration::ZERO).await, None);
    }

    /// Successive reads, and what the check reports of them (`None`: a pass). Negative
    /// where something is reported.
    #[rstest]
    #[case::nothing_at_first(vec![vec![]], None)]
    #[case::gone_by_the_second_read(vec![pod(), vec![]], None)]
    #[case::seen_twice(vec![pod(), pod()], Some("Pod p (Running)"))]
    #[case::only_what_persisted(vec![vec![running("p", "1"), leftover("Job", "j", "2")], vec![leftover("Job", "j", "2")]], Some("Job j"))]
    #[case::replaced_then_persisting(vec![vec![running("p", "1")], vec![running("q", "2")], vec![running("q", "2")]], Some("Pod q (Running)"))]
    #[case::replaced_then_gone(vec![vec![running("p", "1")], vec![running("q", "2")], vec![]], None)]
    #[case::churning_up_to_the_bound(vec![vec![running("p", "1")], vec![running("q", "2")], vec![running("r", "3")]], Some("Pod r (Running)"))]
    #[tokio::test]
    async fn leftovers_are_reported_once_two_reads_agree(
        #[case] reads: Vec<Vec<Leftover>>,
        #[case] reported: Option<&str>,
    ) {
        let cluster = Scripted::new(reads.into_iter().map(Ok).collect());
        let found = check(&cluster, &released(), Duration::ZERO).await;
        let expected = reported.map(|left| {
            format!("ResourcesDeployed stopped being True while these still exist: {left}")
        });
        assert_eq!(found, expected);
        assert_eq!(cluster.calls_left(), 0, "every scripted read is made");
    }
}
