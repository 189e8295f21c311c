//! The CustomResourceDefinition generated from the types in [`crate::api`].

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use schemars::Schema;

use crate::api::AppWrapper;

/// Schema of a component template: an arbitrary embedded Kubernetes object.
pub fn embedded_resource(_: &mut schemars::SchemaGenerator) -> Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

pub fn appwrapper_crd() -> CustomResourceDefinition {
    AppWrapper::crd()
}
