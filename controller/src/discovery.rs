//! apiVersion/kind → API resource and scope, through discovery. Hits are cached; misses are
//! always re-discovered, since CRDs may be installed late, and remembered with the time of the
//! first one, so that a kind is taken as unserved only when it stays so.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use kube::discovery::oneshot::pinned_kind;

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The reference's "no match for kind": the resource type is not served, and every fresh
    /// discovery for `unserved_for` has missed it.
    #[error("no matches for kind \"{kind}\" in version \"{api_version}\"")]
    NoMatch {
        api_version: String,
        kind: String,
        unserved_for: Duration,
    },
    #[error("discovering {kind} in {api_version}: {source}")]
    Api {
        api_version: String,
        kind: String,
        source: kube::Error,
    },
}

/// A served kind: its resource and whether its objects live in namespaces.
#[derive(Clone, Debug)]
pub struct DiscoveredResource {
    pub resource: ApiResource,
    pub scope: Scope,
}

impl DiscoveredResource {
    /// The objects of this kind in `namespace`; every object of a cluster-scoped kind, since
    /// those have no namespace (the API server drops the one a wrapped template gets).
    pub fn api(&self, client: &Client, namespace: &str) -> Api<DynamicObject> {
        Api::dynamic(client.clone(), &self.resource, &self.scope).constrain(namespace)
    }
}

type Key = (String, String);

#[derive(Default)]
pub struct ResourceCache {
    known: Mutex<HashMap<Key, DiscoveredResource>>,
    /// When discovery first missed each kind it has missed ever since.
    missing_since: Mutex<HashMap<Key, Instant>>,
}

pub fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

impl ResourceCache {
    pub async fn resolve(
        &self,
        client: &Client,
        api_version: &str,
        kind: &str,
    ) -> Result<DiscoveredResource, ResolveError> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(found) = self.lookup(&key) {
            return Ok(found);
        }
        let no_match = |unserved_for| ResolveError::NoMatch {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            unserved_for,
        };
        if kind.is_empty() || api_version.is_empty() {
            return Err(no_match(Duration::ZERO));
        }
        match pinned_kind(client, &gvk(api_version, kind)).await {
            Ok((resource, capabilities)) => {
                let discovered = DiscoveredResource {
                    resource,
                    scope: capabilities.scope,
                };
                self.answered(&key);
                if let Ok(mut known) = self.known.lock() {
                    known.insert(key, discovered.clone());
                }
                Ok(discovered)
            }
            Err(e) if is_unserved(&e) => Err(no_match(self.missed(key))),
            Err(source) => {
                // A failed discovery (an API server restarting) ends a run of misses: only
                // misses answered back to back over the whole span count.
                self.answered(&key);
                Err(ResolveError::Api {
                    api_version: api_version.to_owned(),
                    kind: kind.to_owned(),
                    source,
                })
            }
        }
    }

    /// Drops a cached resource, e.g. after the server stopped serving it.
    pub fn forget(&self, api_version: &str, kind: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.remove(&(api_version.to_owned(), kind.to_owned()));
        }
    }

    fn lookup(&self, key: &Key) -> Option<DiscoveredResource> {
        self.known.lock().ok()?.get(key).cloned()
    }

    /// Ends the run of misses of `key`, if any.
    fn answered(&self, key: &Key) {
        if let Ok(mut missing) = self.missing_since.lock() {
            missing.remove(key);
        }
    }

    /// Notes a miss; returns how long the kind has been missing.
    fn missed(&self, key: Key) -> Duration {
        let now = Instant::now();
        match self.missing_since.lock() {
            Ok(mut missing) => now.duration_since(*missing.entry(key).or_insert(now)),
            Err(_) => Duration::ZERO,
        }
    }
}

/// Discovery found no such kind, or no such group-version: the API server answers an unknown
/// group-version with a plain `404 page not found`, which is no `NotFound` Status.
fn is_unserved(error: &kube::Error) -> bool {
    match error {
        kube::Error::Discovery(_) => true,
        kube::Error::Api(status) => status.is_not_found() || status.code == 404,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use kube::core::Status;
    use rstest::rstest;

    #[rstest]
    #[case::missing_kind(kube::Error::Discovery(kube::error::DiscoveryError::MissingKind("Unserved".into())), true)]
    #[case::missing_group_version(
        kube::Error::Api(Status::failure("404 page not found", "Failed to parse error data").with_code(404).boxed()),
        true
    )]
    #[case::not_found_status(kube::Error::Api(Status::failure("gone", "NotFound").with_code(404).boxed()), true)]
    #[case::forbidden(kube::Error::Api(Status::failure("no", "Forbidden").with_code(403).boxed()), false)]
    #[case::unavailable(kube::Error::Api(Status::failure("later", "ServiceUnavailable").with_code(503).boxed()), false)]
    fn an_unserved_kind_is_no_match_and_other_errors_are_not(
        #[case] error: kube::Error,
        #[case] unserved: bool,
    ) {
        assert_eq!(is_unserved(&error), unserved);
    }

    #[test]
    fn a_miss_is_timed_from_the_first_of_its_run_and_any_other_answer_ends_the_run() {
        let cache = ResourceCache::default();
        let key = || ("awconf.dev/v1".to_string(), "Widget".to_string());
        assert_eq!(cache.missed(key()), Duration::ZERO);
        std::thread::sleep(Duration::from_millis(20));
        assert!(cache.missed(key()) >= Duration::from_millis(20));
        let other = ("awconf.dev/v1".to_string(), "Gadget".to_string());
        assert_eq!(cache.missed(other), Duration::ZERO);
        cache.answered(&key());
        assert_eq!(
            cache.missed(key()),
            Duration::ZERO,
            "an answer ends the run"
        );
    }

    #[rstest]
    #[case::namespaced(
        ApiResource::erase::<Job>(&()),
        Scope::Namespaced,
        "/apis/batch/v1/namespaces/team/jobs"
    )]
    #[case::cluster_scoped(
        ApiResource::erase::<PriorityClass>(&()),
        Scope::Cluster,
        "/apis/scheduling.k8s.io/v1/priorityclasses"
    )]
    #[tokio::test]
    async fn objects_are_reached_through_their_scope(
        #[case] resource: ApiResource,
        #[case] scope: Scope,
        #[case] url: &str,
    ) {
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let discovered = DiscoveredResource { resource, scope };
        assert_eq!(discovered.api(&client, "team").resource_url(), url);
    }
}
