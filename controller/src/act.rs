//! Applies a [`Decision`] through the API server.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};

use crate::api::{AppWrapper, AppWrapperStatus, FINALIZER};
use crate::decide::{
    CreateErrorClass, CreateOutcome, CreateResult, Decision, Effect, ObjectTarget,
};
use crate::discovery::{ResolveError, ResourceCache};
use crate::events::{EventDetails, EventRecorder};
use crate::merge_patch;
use crate::metrics::Metrics;
use crate::resources::controller_name;

pub struct Actor<'a> {
    pub client: &'a Client,
    pub resources: &'a ResourceCache,
    pub recorder: &'a EventRecorder,
    pub metrics: &'a Metrics,
}

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("adding finalizer: {0}")]
    AddFinalizer(#[source] kube::Error),
    #[error("removing finalizer: {0}")]
    RemoveFinalizer(#[source] kube::Error),
    #[error("patching status: {0}")]
    Status(#[source] kube::Error),
    #[error("serializing status: {0}")]
    Serialize(#[from] serde_json::Error),
}

impl ActError {
    /// Optimistic-lock conflicts are expected under concurrent writers.
    pub fn is_conflict(&self) -> bool {
        let (ActError::AddFinalizer(e) | ActError::RemoveFinalizer(e) | ActError::Status(e)) = self
        else {
            return false;
        };
        matches!(e, kube::Error::Api(s) if s.is_conflict())
    }
}

/// The API server's message for an error, as the reference's `err.Error()`.
pub fn error_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) if !s.message.is_empty() => s.message.clone(),
        e => e.to_string(),
    }
}

impl Actor<'_> {
    /// Applies `decision`, which was computed from `original`; `aw` is kept up to date with the
    /// writes, and `written` gets the resourceVersion each write of the AppWrapper left behind,
    /// in order. Returns the outcome of the create the decision asked for, if any.
    pub async fn apply(
        &self,
        aw: &mut AppWrapper,
        original: &AppWrapperStatus,
        decision: &Decision,
        written: &mut Vec<String>,
    ) -> Result<Option<CreateOutcome>, ActError> {
        let name = aw.name_any();
        let namespace = aw.namespace().unwrap_or_default();
        let api: Api<AppWrapper> = Api::namespaced(self.client.clone(), &namespace);
        for warning in &decision.warnings {
            tracing::warn!(appwrapper = %name, namespace = %namespace, "{warning}");
        }

        if decision.effects.contains(&Effect::AddFinalizer) {
            let mut finalizers = aw.finalizers().to_vec();
            finalizers.push(FINALIZER.to_owned());
            self.patch_finalizers(&api, aw, finalizers)
                .await
                .map_err(ActError::AddFinalizer)?;
            written.extend(aw.resource_version());
        }

        let patch = merge_patch::diff(
            &serde_json::to_value(original)?,
            &serde_json::to_value(&decision.status)?,
        );
        let mut patched = true;
        if let Some(patch) = patch {
            // Conditional on the version decided from: a decision made on an AppWrapper that has
            // changed since fails with a conflict and is made again.
            let body = json!({
                "metadata": { "resourceVersion": aw.resource_version() },
                "status": patch,
            });
            match api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
                .await
            {
                Ok(updated) => {
                    aw.metadata.resource_version = updated.metadata.resource_version;
                    aw.status = Some(decision.status.clone());
                    written.extend(aw.resource_version());
                }
                Err(e) if decision.ignore_status_error => {
                    tracing::warn!(appwrapper = %name, "status patch failed (ignored): {e}");
                    patched = false;
                }
                Err(e) => return Err(ActError::Status(e)),
            }
        }

        let mut outcome = None;
        for effect in &decision.effects {
            match effect {
                Effect::AddFinalizer => {}
                Effect::CountPhase(phase) => {
                    if patched {
                        tracing::info!(appwrapper = %name, namespace = %namespace, phase = %phase, "phase transition");
                        self.metrics.count_phase(&namespace, *phase);
                    }
                }
                Effect::Event {
                    reason,
                    action,
                    message,
                } => {
                    let details = EventDetails {
                        reason: reason.clone(),
                        action: action.clone(),
                        message: message.clone(),
                    };
                    self.event(aw, &details).await
                }
                Effect::CreateComponent { index, object } => {
                    let result = self.create(&namespace, object).await;
                    tracing::debug!(appwrapper = %name, index, ?result, "create component");
                    outcome = Some(CreateOutcome {
                        index: *index,
                        result,
                    });
                }
                Effect::DeleteComponent {
                    target, forceful, ..
                } => self.delete_component(&namespace, target, *forceful).await,
                Effect::ForceDeletePod { name: pod } => {
                    self.force_delete_pod(&namespace, pod).await
                }
                Effect::RemoveFinalizer => {
                    let finalizers = aw
                        .finalizers()
                        .iter()
                        .filter(|f| *f != FINALIZER)
                        .cloned()
                        .collect();
                    self.patch_finalizers(&api, aw, finalizers)
                        .await
                        .map_err(ActError::RemoveFinalizer)?;
                }
            }
        }
        Ok(outcome)
    }

    /// Replaces `metadata.finalizers`, conditional on the resourceVersion we read.
    async fn patch_finalizers(
        &self,
        api: &Api<AppWrapper>,
        aw: &mut AppWrapper,
        finalizers: Vec<String>,
    ) -> Result<(), kube::Error> {
        let body = json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": aw.resource_version(),
            }
        });
        let updated = api
            .patch(
                &aw.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&body),
            )
            .await?;
        aw.metadata.resource_version = updated.metadata.resource_version;
        aw.metadata.finalizers = updated.metadata.finalizers;
        Ok(())
    }

    async fn event(&self, aw: &AppWrapper, details: &EventDetails) {
        if let Err(e) = self.recorder.record(&aw.object_ref(&()), details).await {
            tracing::warn!(appwrapper = %aw.name_any(), "publishing event {}: {e}", details.reason);
        }
    }

    async fn create(&self, namespace: &str, object: &Value) -> CreateResult {
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        let resource = match self.resources.resolve(self.client, api_version, kind).await {
            Ok(r) => r,
            Err(e @ ResolveError::NoMatch { .. }) => {
                return CreateResult::Failed {
                    message: e.to_string(),
                    class: CreateErrorClass::NoMatch,
                };
            }
            Err(e) => {
                return CreateResult::Failed {
                    message: e.to_string(),
                    class: CreateErrorClass::Other,
                };
            }
        };
        let obj: DynamicObject = match serde_json::from_value(object.clone()) {
            Ok(o) => o,
            Err(e) => {
                return CreateResult::Failed {
                    message: e.to_string(),
                    class: CreateErrorClass::Invalid,
                };
            }
        };
        let api = resource.api(self.client, namespace);
        match api.create(&PostParams::default(), &obj).await {
            Ok(created) => CreateResult::Created {
                name: created.name_any(),
            },
            Err(kube::Error::Api(s)) if s.is_already_exists() => {
                let name = obj.name_any();
                match api.get(&name).await {
                    Ok(existing) => CreateResult::AlreadyExists {
                        controller: controller_name(existing.owner_references())
                            .map(ToOwned::to_owned),
                        name,
                    },
                    Err(e) => CreateResult::ExistingUnreadable {
                        message: error_message(&e),
                    },
                }
            }
            Err(e) => {
                let class = match &e {
                    kube::Error::Api(s) if s.is_invalid() || s.code == 422 => {
                        CreateErrorClass::Invalid
                    }
                    kube::Error::Api(s) if s.is_not_found() => {
                        self.resources.forget(api_version, kind);
                        CreateErrorClass::Other
                    }
                    _ => CreateErrorClass::Other,
                };
                CreateResult::Failed {
                    message: error_message(&e),
                    class,
                }
            }
        }
    }

    async fn delete_component(&self, namespace: &str, target: &ObjectTarget, forceful: bool) {
        let resource = match self
            .resources
            .resolve(self.client, &target.api_version, &target.kind)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(kind = %target.kind, name = %target.name, "cannot delete: {e}");
                return;
            }
        };
        let params = if forceful {
            DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            }
        } else {
            DeleteParams::background()
        };
        let api = resource.api(self.client, namespace);
        match api.delete(&target.name, &params).await {
            Ok(_) => tracing::debug!(kind = %target.kind, name = %target.name, forceful, "deleted"),
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => {
                tracing::warn!(kind = %target.kind, name = %target.name, "delete failed: {e}")
            }
        }
    }

    async fn force_delete_pod(&self, namespace: &str, name: &str) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        match api.delete(name, &params).await {
            Ok(_) => tracing::info!(pod = %name, namespace = %namespace, "force-deleted pod"),
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => tracing::warn!(pod = %name, "force delete failed: {e}"),
        }
    }
}
