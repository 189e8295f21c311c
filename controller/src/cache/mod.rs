//! What the controller's watches have seen of labelled pods and wrapped objects, kept small:
//! of each, only what observe reads. Observe asks the API server instead for a kind no watch
//! covers, and before a watch's first complete list.

pub mod index;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject};
use kube::discovery::Scope;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::api::{APPWRAPPER_LABEL, AppWrapper};
use crate::decide::PodObservation;
use crate::decide::summary::count_failed_conditions;
use crate::discovery::DiscoveredResource;
use crate::pod_observation::pod_observation;
use crate::resources::controller_name;
use index::{Change, Index};

/// What observe reads of a wrapped object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedObject {
    pub deleting: bool,
    /// The name in its controller owner reference.
    pub controller: Option<String>,
    pub failed_conditions: u32,
}

/// Namespace, AppWrapper, pod.
type PodKey = (String, String, String);
/// Namespace, name.
type ObjectKey = (String, String);
/// apiVersion, kind.
pub type KindKey = (String, String);

/// The kinds whose watches the controller runs anyway, to be woken by them.
const WATCHED: [(&str, &str); 2] = [("v1", "Pod"), ("batch/v1", "Job")];

#[derive(Default)]
pub struct Caches {
    pods: Mutex<Index<PodKey, PodObservation>>,
    objects: Mutex<HashMap<KindKey, Index<ObjectKey, CachedObject>>>,
    /// Watches of the other kinds, started when an AppWrapper first wraps one.
    watches: Mutex<HashMap<KindKey, JoinHandle<()>>>,
    /// The other kinds the AppWrappers wrapped when the controller started, whose first lists
    /// reconciles wait for as for pods and Jobs; `None` until they are known.
    wrapped_at_start: Mutex<Option<Vec<KindKey>>>,
}

impl Drop for Caches {
    fn drop(&mut self) {
        if let Ok(watches) = self.watches.lock() {
            watches.values().for_each(JoinHandle::abort);
        }
    }
}

impl Caches {
    /// The pods labelled for `appwrapper` in `namespace`; `None` before the first complete list.
    pub fn pods(&self, namespace: &str, appwrapper: &str) -> Option<Vec<PodObservation>> {
        let pods = self.pods.lock().ok()?;
        if !pods.synced() {
            return None;
        }
        let from = (namespace.to_owned(), appwrapper.to_owned(), String::new());
        Some(
            pods.range(from..)
                .take_while(|((ns, aw, _), _)| ns == namespace && aw == appwrapper)
                .map(|(_, pod)| pod.clone())
                .collect(),
        )
    }

    /// The AppWrappers (namespace, name) with a labelled pod on `node`.
    pub fn appwrappers_on_node(&self, node: &str) -> BTreeSet<(String, String)> {
        let Ok(pods) = self.pods.lock() else {
            return BTreeSet::new();
        };
        pods.range(..)
            .filter(|(_, pod)| pod.node_name.as_deref() == Some(node))
            .map(|((ns, aw, _), _)| (ns.clone(), aw.clone()))
            .collect()
    }

    /// Whether the pod and Job watches have both listed completely: before that, observe reads
    /// from the API server, which a restart among many AppWrappers turns into a burst.
    /// So are the watches of the kinds wrapped at the start ([`Caches::wrapped_at_start`]).
    pub fn watched_synced(&self) -> bool {
        let pods = self.pods.lock().is_ok_and(|pods| pods.synced());
        let Ok(at_start) = self.wrapped_at_start.lock() else {
            return false;
        };
        let Some(at_start) = at_start.as_ref() else {
            return false;
        };
        let job = ("batch/v1".to_owned(), "Job".to_owned());
        let listed = self.objects.lock().is_ok_and(|objects| {
            at_start
                .iter()
                .chain([&job])
                .all(|kind| objects.get(kind).is_some_and(Index::synced))
        });
        pods && listed
    }

    /// The kinds the AppWrappers wrapped when the controller started, whose watches have been
    /// started: their first lists count for [`Caches::watched_synced`].
    pub fn wrapped_at_start(&self, kinds: Vec<KindKey>) {
        if let Ok(mut at_start) = self.wrapped_at_start.lock() {
            *at_start = Some(kinds);
        }
    }

    /// `Some(None)`: the watch of the kind has no such object; `None`: no watch of the kind has
    /// listed it completely yet.
    pub fn object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Option<CachedObject>> {
        let objects = self.objects.lock().ok()?;
        let index = objects.get(&(api_version.to_owned(), kind.to_owned()))?;
        if !index.synced() {
            return None;
        }
        Some(index.get(&(namespace.to_owned(), name.to_owned())).cloned())
    }

    pub fn pod_event(&self, event: &watcher::Event<Pod>) {
        let keyed = change(event, |pod| {
            let key = (
                pod.namespace()?,
                pod.labels().get(APPWRAPPER_LABEL)?.clone(),
                pod.name_any(),
            );
            Some((key, pod_observation(pod)))
        });
        if let (Some(keyed), Ok(mut pods)) = (keyed, self.pods.lock()) {
            pods.apply(keyed);
        }
        self.object_event("v1", "Pod", event, |pod| cached(pod, 0));
    }

    pub fn job_event(&self, event: &watcher::Event<Job>) {
        self.object_event("batch/v1", "Job", event, |job| {
            let status = json!({ "status": job.status });
            cached(job, count_failed_conditions("batch/v1", "Job", &status))
        });
    }

    fn object_event<K: Resource>(
        &self,
        api_version: &str,
        kind: &str,
        event: &watcher::Event<K>,
        value: impl Fn(&K) -> CachedObject,
    ) {
        let Some(keyed) = change(event, |obj| {
            Some(((obj.namespace()?, obj.name_any()), value(obj)))
        }) else {
            return;
        };
        if let Ok(mut objects) = self.objects.lock() {
            objects
                .entry((api_version.to_owned(), kind.to_owned()))
                .or_default()
                .apply(keyed);
        }
    }

    /// Starts watching the labelled objects of a namespaced kind that no watch covers yet; until
    /// its first complete list, [`Caches::object`] knows nothing of the kind. Returns whether a
    /// watch of this module's covers the kind (not pods or Jobs, not a cluster-scoped kind).
    pub fn watch_kind(self: &Arc<Self>, client: &Client, resource: &DiscoveredResource) -> bool {
        let api_version = resource.resource.api_version.clone();
        let kind = resource.resource.kind.clone();
        if resource.scope != Scope::Namespaced
            || WATCHED.contains(&(api_version.as_str(), kind.as_str()))
        {
            return false;
        }
        let Ok(mut watches) = self.watches.lock() else {
            return false;
        };
        let key = (api_version.clone(), kind.clone());
        if watches.contains_key(&key) {
            return true;
        }
        let caches = Arc::downgrade(self);
        let api = Api::<DynamicObject>::all_with(client.clone(), &resource.resource);
        let labelled = watcher::Config::default().labels(APPWRAPPER_LABEL);
        let task = tokio::spawn(async move {
            let mut events = watcher(api, labelled).default_backoff().boxed();
            while let Some(event) = events.next().await {
                let Some(caches) = caches.upgrade() else {
                    return;
                };
                match event {
                    Ok(event) => caches.object_event(&api_version, &kind, &event, |obj| {
                        cached(obj, count_failed_conditions(&api_version, &kind, &obj.data))
                    }),
                    Err(e) => tracing::warn!("watch of {kind} {api_version}: {e}"),
                }
            }
        });
        watches.insert(key, task);
        true
    }
}

/// The namespaced kinds other than pods and Jobs that `appwrappers` have recorded in their
/// component status, each once.
pub fn wrapped_kinds<'a>(appwrappers: impl IntoIterator<Item = &'a AppWrapper>) -> Vec<KindKey> {
    let kinds: BTreeSet<KindKey> = appwrappers
        .into_iter()
        .filter_map(|aw| aw.status.as_ref())
        .flat_map(|status| &status.component_status)
        .filter(|cs| !cs.api_version.is_empty() && !cs.kind.is_empty())
        .filter(|cs| !WATCHED.contains(&(cs.api_version.as_str(), cs.kind.as_str())))
        .map(|cs| (cs.api_version.clone(), cs.kind.clone()))
        .collect();
    kinds.into_iter().collect()
}

fn cached<K: Resource>(obj: &K, failed_conditions: u32) -> CachedObject {
    CachedObject {
        deleting: obj.meta().deletion_timestamp.is_some(),
        controller: controller_name(obj.owner_references()).map(ToOwned::to_owned),
        failed_conditions,
    }
}

/// The event reduced by `keyed`; `None` for an object it gives no key.
fn change<K, Key, V>(
    event: &watcher::Event<K>,
    keyed: impl Fn(&K) -> Option<(Key, V)>,
) -> Option<Change<Key, V>> {
    Some(match event {
        watcher::Event::Apply(obj) => {
            let (key, value) = keyed(obj)?;
            Change::Apply(key, value)
        }
        watcher::Event::Delete(obj) => Change::Delete(keyed(obj)?.0),
        watcher::Event::Init => Change::Init,
        watcher::Event::InitApply(obj) => {
            let (key, value) = keyed(obj)?;
            Change::InitApply(key, value)
        }
        watcher::Event::InitDone => Change::InitDone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(api_version: &str, kind: &str) -> KindKey {
        (api_version.to_owned(), kind.to_owned())
    }

    fn listed(caches: &Caches, kind: &KindKey) {
        for event in [watcher::Event::Init, watcher::Event::InitDone] {
            caches.object_event::<DynamicObject>(&kind.0, &kind.1, &event, |obj| cached(obj, 0));
        }
    }

    #[test]
    fn the_watched_kinds_are_synced_once_both_have_listed() {
        let caches = Caches::default();
        caches.wrapped_at_start(vec![]);
        assert!(!caches.watched_synced());
        caches.pod_event(&watcher::Event::Init);
        caches.pod_event(&watcher::Event::InitDone);
        assert!(!caches.watched_synced(), "Jobs have not listed yet");
        caches.job_event(&watcher::Event::Init);
        assert!(!caches.watched_synced(), "Jobs are still listing");
        caches.job_event(&watcher::Event::InitDone);
        assert!(caches.watched_synced());
    }

    #[test]
    fn the_kinds_wrapped_at_the_start_are_waited_for_too() {
        let caches = Caches::default();
        listed(&caches, &kind("v1", "Pod"));
        caches.pod_event(&watcher::Event::Init);
        caches.pod_event(&watcher::Event::InitDone);
        listed(&caches, &kind("batch/v1", "Job"));
        assert!(
            !caches.watched_synced(),
            "the wrapped kinds are not known yet"
        );
        let service = kind("v1", "Service");
        caches.wrapped_at_start(vec![service.clone()]);
        assert!(!caches.watched_synced(), "Services have not listed yet");
        listed(&caches, &service);
        assert!(caches.watched_synced());
    }

    #[test]
    fn the_wrapped_kinds_are_those_in_component_status_but_pods_and_jobs() {
        let aw = |kinds: &[(&str, &str)]| AppWrapper {
            status: Some(crate::api::AppWrapperStatus {
                component_status: kinds
                    .iter()
                    .map(
                        |(api_version, kind)| crate::api::AppWrapperComponentStatus {
                            api_version: (*api_version).into(),
                            kind: (*kind).into(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            }),
            ..AppWrapper::new("aw", Default::default())
        };
        let appwrappers = [
            aw(&[("apps/v1", "Deployment"), ("batch/v1", "Job"), ("", "")]),
            aw(&[("v1", "Service"), ("v1", "Pod"), ("apps/v1", "Deployment")]),
            AppWrapper::new("new", Default::default()),
        ];
        assert_eq!(
            wrapped_kinds(&appwrappers),
            [kind("apps/v1", "Deployment"), kind("v1", "Service")]
        );
    }
}
