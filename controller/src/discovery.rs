//! apiVersion/kind → API resource, through discovery. Hits are cached; misses are always
//! re-discovered, since CRDs may be installed late.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::Client;
use kube::api::{ApiResource, GroupVersionKind};
use kube::discovery::oneshot::pinned_kind;

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The reference's "no match for kind": the resource type is not served.
    #[error("no matches for kind \"{kind}\" in version \"{api_version}\"")]
    NoMatch { api_version: String, kind: String },
    #[error("discovering {kind} in {api_version}: {source}")]
    Api {
        api_version: String,
        kind: String,
        source: kube::Error,
    },
}

#[derive(Default)]
pub struct ResourceCache {
    known: Mutex<HashMap<(String, String), ApiResource>>,
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
    ) -> Result<ApiResource, ResolveError> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(found) = self.lookup(&key) {
            return Ok(found);
        }
        let no_match = || ResolveError::NoMatch {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        };
        if kind.is_empty() || api_version.is_empty() {
            return Err(no_match());
        }
        match pinned_kind(client, &gvk(api_version, kind)).await {
            Ok((resource, _)) => {
                if let Ok(mut known) = self.known.lock() {
                    known.insert(key, resource.clone());
                }
                Ok(resource)
            }
            Err(kube::Error::Discovery(_)) => Err(no_match()),
            Err(kube::Error::Api(status)) if status.is_not_found() => Err(no_match()),
            Err(source) => Err(ResolveError::Api {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                source,
            }),
        }
    }

    /// Drops a cached resource, e.g. after the server stopped serving it.
    pub fn forget(&self, api_version: &str, kind: &str) {
        if let Ok(mut known) = self.known.lock() {
            known.remove(&(api_version.to_owned(), kind.to_owned()));
        }
    }

    fn lookup(&self, key: &(String, String)) -> Option<ApiResource> {
        self.known.lock().ok()?.get(key).cloned()
    }
}
