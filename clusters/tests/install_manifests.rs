//! Our install manifests carry every object of the reference's release (v1.2.2, its
//! `config/default` rendered by `kubectl kustomize` as its users install it), so that what
//! users bind and rely on (the metrics reader, the aggregated editor and viewer roles) is there
//! when ours replaces it. Differences are listed here, each with its reason.

use std::collections::BTreeSet;

use clusters::install::controller::Settings;
use clusters::install::controller::manifests::render;
use clusters::install::manifests::kustomize;
use clusters::toolchain::{self, Component};
use serde_json::Value;

/// Objects of the reference's release that ours leaves out, and why. None today.
const ONLY_IN_THE_REFERENCE: &[(&str, &str)] = &[];
/// Objects of ours the reference's release lacks, and why. None today.
const ONLY_IN_OURS: &[(&str, &str)] = &[];

/// The ClusterRoles users bind: rules and aggregation labels must be the reference's.
const USER_FACING_ROLES: &[&str] = &[
    "appwrapper-metrics-reader",
    "appwrapper-editor-role",
    "appwrapper-viewer-role",
    "appwrapper-user-role",
];

fn key(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn role<'a>(objects: &'a [Value], name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == "ClusterRole" && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no ClusterRole {name}"))
}

fn aggregation(role: &Value) -> BTreeSet<String> {
    role["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("rbac.authorization.k8s.io/aggregate-to-"))
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect()
}

#[test]
fn our_install_manifests_carry_every_object_of_the_reference_release() {
    let cache = toolchain::cache_dir();
    let version = toolchain::APPWRAPPER_DEFAULT;
    let source = toolchain::module_source(
        &Component::appwrapper(version),
        &cache,
        "github.com/project-codeflare/appwrapper",
    )
    .unwrap();
    let reference = kustomize(&cache, &source.join("config/default")).unwrap();
    let ours = render(&Settings::release("example.com/appwrapper:v1"));

    let theirs: BTreeSet<String> = reference.iter().map(key).collect();
    let mine: BTreeSet<String> = ours.iter().map(key).collect();
    let allowed = |list: &[(&str, &str)]| list.iter().map(|(k, _)| k.to_string()).collect();
    let missing: BTreeSet<String> = theirs.difference(&mine).cloned().collect();
    let extra: BTreeSet<String> = mine.difference(&theirs).cloned().collect();
    assert_eq!(
        missing,
        allowed(ONLY_IN_THE_REFERENCE),
        "objects of the reference {version} release missing from ours"
    );
    assert_eq!(
        extra,
        allowed(ONLY_IN_OURS),
        "objects of ours the reference {version} release lacks"
    );

    for name in USER_FACING_ROLES {
        let (want, got) = (role(&reference, name), role(&ours, name));
        assert_eq!(got["rules"], want["rules"], "rules of {name}");
        assert_eq!(aggregation(got), aggregation(want), "aggregation of {name}");
    }
}
