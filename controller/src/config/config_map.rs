//! The reference's configuration source: a ConfigMap in the operator's namespace. When it is
//! missing it is created holding the defaults; otherwise its only entry is laid over them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::Value;

use super::{Config, ConfigError};

/// The default of the reference's `--config` flag.
pub const DEFAULT_NAME: &str = "appwrapper-operator-config";

/// The key of the entry a created ConfigMap holds. Any key is read.
pub const KEY: &str = "config.yaml";

/// Fields of this controller's own (JSON pointers), left out of a created ConfigMap so that it
/// holds what the reference writes.
const OWN_FIELDS: &[&str] = &[
    "/controllerManager/leaderElectionID",
    "/controllerManager/leaderElectionNamespace",
    "/controllerManager/leaseDuration",
    "/controllerManager/renewDeadline",
    "/controllerManager/retryPeriod",
];

#[derive(Debug, thiserror::Error)]
pub enum ConfigMapError {
    #[error("reading ConfigMap {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("creating ConfigMap {namespace}/{name}: {source}")]
    Create {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("rendering the default configuration: {0}")]
    Render(String),
    #[error("cannot resolve config from ConfigMap {namespace}/{name}")]
    Unresolvable { namespace: String, name: String },
    #[error("ConfigMap {namespace}/{name}: {source}")]
    Config {
        namespace: String,
        name: String,
        source: ConfigError,
    },
}

/// The configuration from ConfigMap `name` in `namespace`: its entry laid over `defaults`, or
/// `defaults` after creating the ConfigMap with them when there is none.
pub async fn load_or_create(
    client: &Client,
    namespace: &str,
    name: &str,
    defaults: &Config,
) -> Result<Config, ConfigMapError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let existing = api
        .get_opt(name)
        .await
        .map_err(|source| ConfigMapError::Read {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })?;
    let Some(config_map) = existing else {
        let created = default_config_map(namespace, name, defaults)?;
        api.create(&PostParams::default(), &created)
            .await
            .map_err(|source| ConfigMapError::Create {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                source,
            })?;
        tracing::info!(
            namespace,
            name,
            "created the configuration ConfigMap with the defaults"
        );
        return Ok(defaults.clone());
    };
    config_from(&config_map, namespace, name, defaults)
}

/// The ConfigMap's only `data` entry, whatever its key, laid over `defaults`.
pub fn config_from(
    config_map: &ConfigMap,
    namespace: &str,
    name: &str,
    defaults: &Config,
) -> Result<Config, ConfigMapError> {
    let data = config_map.data.as_ref();
    let document = match data.map(|d| d.values().collect::<Vec<_>>()).as_deref() {
        Some([document]) => document.as_str(),
        _ => {
            return Err(ConfigMapError::Unresolvable {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            });
        }
    };
    defaults
        .overlaid(document)
        .map_err(|source| ConfigMapError::Config {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })
}

/// The ConfigMap the reference creates when there is none: [`KEY`] holding `defaults` as Go
/// marshals them.
pub fn default_config_map(
    namespace: &str,
    name: &str,
    defaults: &Config,
) -> Result<ConfigMap, ConfigMapError> {
    let document = reference_document(defaults)?;
    let yaml =
        serde_saphyr::to_string(&document).map_err(|e| ConfigMapError::Render(e.to_string()))?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(KEY.to_owned(), yaml)])),
        ..ConfigMap::default()
    })
}

/// `config` as the reference's `OperatorConfig` marshals: without this controller's own fields,
/// and, every field being `omitempty`, without the false, zero, empty and null ones.
fn reference_document(config: &Config) -> Result<Value, ConfigMapError> {
    let mut document =
        serde_json::to_value(config).map_err(|e| ConfigMapError::Render(e.to_string()))?;
    for pointer in OWN_FIELDS {
        let (parent, field) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        if let Some(Value::Object(parent)) = document.pointer_mut(parent) {
            parent.remove(field);
        }
    }
    omit_empty(&mut document);
    Ok(document)
}

/// Go's `omitempty` on every field. Objects stay: Go never omits a struct, and the defaults have
/// no empty map.
fn omit_empty(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.retain(|_, v| !is_empty(v));
            fields.values_mut().for_each(omit_empty);
        }
        Value::Array(items) => items.iter_mut().for_each(omit_empty),
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests;
