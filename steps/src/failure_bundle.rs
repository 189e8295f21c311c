//! The bundle kept for a failed scenario: what failed and what the steps did, the events of its
//! namespace, the YAML of its AppWrappers, Workloads, pods and wrapped objects, the
//! controller and Kueue log lines about it, and the logs of its own cluster when it has one.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use crate::world::AwWorld;
use crate::yaml::render_object;
use objects::to_value;

pub async fn collect(w: &AwWorld, failure: &str) -> anyhow::Result<PathBuf> {
    let dir = w.h.options.report_dir.join("scenarios").join(&w.ns);
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).with_context(|| format!("writing {name}"))
    };

    let mut summary = format!(
        "Feature: {}\nScenario: {}\nNamespace: {}\n\n{failure}\n\nSteps:\n",
        w.feature, w.scenario, w.ns
    );
    for line in &w.journal {
        let _ = writeln!(summary, "  {line}");
    }
    for t in w.monitor().transitions_in(&w.ns) {
        let _ = writeln!(
            summary,
            "transition {} {} at {}",
            t.name,
            t.describe(),
            t.at
        );
    }
    write("failure.txt", &summary)?;

    let client = &w.client;
    let appwrappers: Vec<Value> = objects::appwrappers(client, &w.ns)
        .list(&ListParams::default())
        .await
        .map(|l| l.items.iter().map(to_value).collect())
        .unwrap_or_default();
    write("appwrappers.yaml", &documents(&appwrappers))?;

    let mut wrapped = Vec::new();
    for aw in &appwrappers {
        for (api_version, kind, name) in objects::components_of(aw) {
            if let Ok(Some(object)) =
                objects::get_object(client, &w.ns, &api_version, &kind, &name).await
            {
                wrapped.push(object);
            }
        }
    }
    write("wrapped-objects.yaml", &documents(&wrapped))?;

    let pods: Vec<Value> = Api::<Pod>::namespaced(client.clone(), &w.ns)
        .list(&ListParams::default())
        .await
        .map(|l| l.items.iter().map(to_value).collect())
        .unwrap_or_default();
    write("pods.yaml", &documents(&pods))?;

    let workloads: Vec<Value> = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        &w.ns,
        &clusters::kueue::objects::api_resource("Workload"),
    )
    .list(&ListParams::default())
    .await
    .map(|l| l.items.iter().map(to_value).collect())
    .unwrap_or_default();
    write("workloads.yaml", &documents(&workloads))?;

    write(
        "events.txt",
        &crate::report::events::text(client, &w.ns).await,
    )?;

    let names: Vec<String> = w.submitted.iter().chain(w.drafts.keys()).cloned().collect();
    for (label, lines) in w.marks.lines_since(&w.ns, &names) {
        write(&format!("logs/{label}.log"), &(lines.join("\n") + "\n"))?;
    }
    if let Some(own) = &w.own_cluster {
        let kept = dir.join("logs").join("own-cluster");
        std::fs::create_dir_all(&kept).with_context(|| format!("creating {}", kept.display()))?;
        for file in own.log_files() {
            if let Some(name) = file.file_name()
                && let Err(e) = std::fs::copy(&file, kept.join(name))
            {
                tracing::warn!("keeping {}: {e}", file.display());
            }
        }
    }
    Ok(dir)
}

fn documents(objects: &[Value]) -> String {
    objects
        .iter()
        .map(render_object)
        .collect::<Vec<_>>()
        .join("---\n")
}
