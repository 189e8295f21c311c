//! The user RBAC admission check (§6.3 step 4): may the requesting user create each wrapped
//! object? One SubjectAccessReview per component, with kinds resolved to resources through a
//! discovery cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use k8s_openapi::api::authentication::v1::UserInfo;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, GroupVersionKind, PostParams};

use super::validate_create::Access;

/// Resolves kinds to resources and asks the API server what a user may do.
pub struct AccessReviewer {
    client: Client,
    resources: Mutex<HashMap<GroupVersionKind, String>>,
}

impl AccessReviewer {
    pub fn new(client: Client) -> Self {
        AccessReviewer {
            client,
            resources: Mutex::new(HashMap::new()),
        }
    }

    /// The RBAC outcome for each `(component index, GVK)`.
    pub async fn review_all(
        &self,
        requests: &[(usize, GroupVersionKind)],
        namespace: &str,
        user: &UserInfo,
    ) -> BTreeMap<usize, Access> {
        let mut outcomes = BTreeMap::new();
        for (index, gvk) in requests {
            outcomes.insert(*index, self.review(gvk, namespace, user).await);
        }
        outcomes
    }

    pub async fn review(&self, gvk: &GroupVersionKind, namespace: &str, user: &UserInfo) -> Access {
        let resource = self.resource(gvk).await;
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(namespace.to_owned()),
                    verb: Some("create".to_owned()),
                    group: Some(gvk.group.clone()),
                    version: Some(gvk.version.clone()),
                    resource: Some(resource.clone()),
                    ..Default::default()
                }),
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: user.extra.clone(),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &review).await {
            Err(e) => Access::Failed(e.to_string()),
            Ok(answer) if answer.status.as_ref().is_some_and(|s| s.allowed) => Access::Allowed,
            Ok(_) => Access::Denied {
                user: user.username.clone().unwrap_or_default(),
                resource,
                namespace: namespace.to_owned(),
            },
        }
    }

    /// The plural resource name of a kind; `*` when discovery fails or finds nothing (not
    /// cached, so a CRD installed later is found).
    async fn resource(&self, gvk: &GroupVersionKind) -> String {
        if let Some(known) = self.resources.lock().ok().and_then(|r| r.get(gvk).cloned()) {
            return known;
        }
        let list = if gvk.group.is_empty() {
            self.client.list_core_api_resources(&gvk.version).await
        } else {
            let group_version = format!("{}/{}", gvk.group, gvk.version);
            self.client.list_api_group_resources(&group_version).await
        };
        let found = list.ok().and_then(|list| {
            list.resources
                .into_iter()
                .find(|r| r.kind == gvk.kind && !r.name.contains('/'))
                .map(|r| r.name)
        });
        match found {
            Some(name) => {
                if let Ok(mut known) = self.resources.lock() {
                    known.insert(gvk.clone(), name.clone());
                }
                name
            }
            None => "*".to_owned(),
        }
    }
}
