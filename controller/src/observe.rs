//! Reads an AppWrapper's pods and wrapped objects into an [`Observation`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, ResourceExt};

use crate::api::condition::RESOURCES_DEPLOYED;
use crate::api::{APPWRAPPER_LABEL, AppWrapper, AppWrapperComponentStatus, FINALIZER, Phase};
use crate::cache::Caches;
use crate::conditions;
use crate::config::{AutopilotConfig, Config};
use crate::decide::summary::count_failed_conditions;
use crate::decide::{
    BuildFailure, ComponentObservation, DesiredObject, FoundObject, ObjectState, Observation,
    PodObservation,
};
use crate::discovery::{ResolveError, ResourceCache};
use crate::pod_observation::pod_observation;
use crate::resources::{AutopilotAntiAffinity, BuildOptions, build_component, controller_name};

/// How long fresh discoveries must all miss a component's kind before no object of it is
/// believed to exist. A restarted API server answers 503 for its CRD groups until it serves
/// them again (within 0.4 s in 14 restarts measured); a 404 in that moment would not outlast
/// this.
pub const UNSERVED_AFTER: Duration = Duration::from_secs(30);

/// What observe reads the cluster through.
pub struct Observer<'a> {
    pub client: &'a Client,
    pub resources: &'a ResourceCache,
    pub config: &'a Config,
    /// Nodes, when the Autopilot node monitor runs.
    pub nodes: Option<&'a Store<Node>>,
    /// What the watches have seen; `None` to read everything from the API server.
    pub caches: Option<&'a Arc<Caches>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("listing pods of appwrapper {name}: {source}")]
    Pods { name: String, source: kube::Error },
}

impl Observer<'_> {
    pub async fn observe(&self, aw: &AppWrapper) -> Result<Observation, ObserveError> {
        let name = aw.name_any();
        let namespace = aw.namespace().unwrap_or_default();
        let status = aw.status.clone().unwrap_or_default();
        let deleting = aw.metadata.deletion_timestamp.is_some();
        let phase = status.phase;
        let component_count = aw.spec.components.len();

        let effective_pod_sets = if status.component_status.len() == component_count {
            Ok(status
                .component_status
                .iter()
                .map(|c| c.pod_sets.clone())
                .collect())
        } else {
            aw.spec
                .components
                .iter()
                .map(crate::podsets::effective_pod_sets)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())
        };

        let size = component_count.max(status.component_status.len());
        let mut components = vec![ComponentObservation::default(); size];
        let deployed = !matches!(phase, Phase::Empty | Phase::Suspended | Phase::Resuming);
        if deployed || deleting {
            for (i, cs) in status.component_status.iter().enumerate() {
                components[i].object = self.read_object(&namespace, &name, cs).await;
            }
        }
        // Suspended and Resetting lead to Resuming in the same decision, which creates.
        let may_create = match phase {
            Phase::Resuming | Phase::Resetting => true,
            Phase::Suspended => !aw.spec.suspend,
            _ => false,
        };
        if may_create && !deleting {
            let opts = build_options(self.config);
            for (i, component) in components.iter_mut().enumerate().take(component_count) {
                let created = status
                    .component_status
                    .get(i)
                    .is_some_and(|cs| conditions::is_true(&cs.conditions, RESOURCES_DEPLOYED));
                if !created {
                    component.desired = Some(desired(aw, i, &opts));
                }
            }
        }

        let pods = if deployed || deleting {
            self.pods(&namespace, &name).await?
        } else {
            Vec::new()
        };
        let no_execute_nodes = match (self.nodes, monitor(self.config)) {
            (Some(nodes), Some(autopilot)) => no_execute_nodes(&pods, nodes, autopilot),
            _ => BTreeMap::new(),
        };

        Ok(Observation {
            name,
            suspend: aw.spec.suspend,
            managed_by: aw.spec.managed_by.clone(),
            deletion_requested: deleting,
            has_finalizer: aw.finalizers().iter().any(|f| f == FINALIZER),
            annotations: aw.annotations().clone(),
            component_count,
            effective_pod_sets,
            components,
            pods,
            no_execute_nodes,
            create_outcome: None,
        })
    }

    async fn pods(&self, namespace: &str, name: &str) -> Result<Vec<PodObservation>, ObserveError> {
        if let Some(pods) = self.caches.and_then(|c| c.pods(namespace, name)) {
            return Ok(pods);
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let selector = format!("{APPWRAPPER_LABEL}={name}");
        let listed = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|source| ObserveError::Pods {
                name: name.to_owned(),
                source,
            })?;
        Ok(listed.items.iter().map(pod_observation).collect())
    }

    async fn read_object(
        &self,
        namespace: &str,
        aw_name: &str,
        cs: &AppWrapperComponentStatus,
    ) -> ObjectState {
        if cs.name.is_empty() {
            return ObjectState::Error("resource name may not be empty".into());
        }
        let resource = match self
            .resources
            .resolve(self.client, &cs.api_version, &cs.kind)
            .await
        {
            Ok(r) => r,
            Err(ResolveError::NoMatch {
                ref api_version,
                ref kind,
                unserved_for,
            }) if unserved_for >= UNSERVED_AFTER => {
                return ObjectState::Unserved(format!(
                    "no discovery has served kind {kind:?} in version {api_version:?} for {}s",
                    unserved_for.as_secs()
                ));
            }
            Err(e) => return ObjectState::Error(e.to_string()),
        };
        if let Some(caches) = self.caches {
            match caches.object(&cs.api_version, &cs.kind, namespace, &cs.name) {
                Some(None) => return ObjectState::NotFound,
                Some(Some(obj)) => {
                    return ObjectState::Found(FoundObject {
                        deleting: obj.deleting,
                        controlled: obj.controller.as_deref() == Some(aw_name),
                        failed_conditions: obj.failed_conditions,
                    });
                }
                None => {
                    caches.watch_kind(self.client, &resource);
                }
            }
        }
        let api = resource.api(self.client, namespace);
        match api.get_opt(&cs.name).await {
            Ok(None) => ObjectState::NotFound,
            Ok(Some(obj)) => ObjectState::Found(FoundObject {
                deleting: obj.metadata.deletion_timestamp.is_some(),
                controlled: controller_name(obj.owner_references()) == Some(aw_name),
                failed_conditions: count_failed_conditions(&cs.api_version, &cs.kind, &obj.data),
            }),
            Err(e) => ObjectState::Error(e.to_string()),
        }
    }
}

fn monitor(config: &Config) -> Option<&AutopilotConfig> {
    config
        .appwrapper
        .autopilot
        .as_ref()
        .filter(|a| a.monitor_nodes)
}

pub fn build_options(config: &Config) -> BuildOptions {
    let autopilot = config
        .appwrapper
        .autopilot
        .as_ref()
        .filter(|a| a.inject_anti_affinities)
        .map(|a| AutopilotAntiAffinity {
            resource_taints: a
                .resource_taints
                .iter()
                .map(|(resource, taints)| {
                    let taints = taints
                        .iter()
                        .map(|t| k8s_openapi::api::core::v1::Taint {
                            key: t.key.clone(),
                            value: Some(t.value.clone()),
                            effect: t.effect.clone(),
                            time_added: None,
                        })
                        .collect();
                    (resource.clone(), taints)
                })
                .collect(),
            prefer_no_schedule_weight: a.prefer_no_schedule_weight,
        });
    BuildOptions {
        scheduler_name: config.appwrapper.scheduler_name.clone(),
        autopilot,
    }
}

fn desired(
    aw: &AppWrapper,
    index: usize,
    opts: &BuildOptions,
) -> Result<DesiredObject, BuildFailure> {
    let object = build_component(aw, index, opts).map_err(|e| BuildFailure {
        message: e.to_string(),
        fatal: e.is_fatal(),
    })?;
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(DesiredObject {
        api_version: text("/apiVersion"),
        kind: text("/kind"),
        name: text("/metadata/name"),
        object,
    })
}

/// Resources that Autopilot flags NoExecute on a node: a configured taint with effect
/// `NoExecute` whose key/value is present as a node *label*.
pub fn no_execute_resources(node: &Node, autopilot: &AutopilotConfig) -> BTreeSet<String> {
    if node.metadata.deletion_timestamp.is_some() {
        return BTreeSet::new();
    }
    let labels = node.labels();
    autopilot
        .resource_taints
        .iter()
        .filter(|(_, taints)| {
            taints.iter().any(|t| {
                t.effect == "NoExecute" && labels.get(&t.key).is_some_and(|v| *v == t.value)
            })
        })
        .map(|(resource, _)| resource.clone())
        .collect()
}

fn no_execute_nodes(
    pods: &[PodObservation],
    nodes: &Store<Node>,
    autopilot: &AutopilotConfig,
) -> BTreeMap<String, BTreeSet<String>> {
    let names: BTreeSet<&str> = pods.iter().filter_map(|p| p.node_name.as_deref()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let node = nodes.get(&ObjectRef::new(name))?;
            let flagged = no_execute_resources(&node, autopilot);
            (!flagged.is_empty()).then(|| (name.to_owned(), flagged))
        })
        .collect()
}

#[cfg(test)]
mod tests;
