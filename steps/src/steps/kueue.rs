//! Kueue: the scenario's ClusterQueue, priorities, and what Kueue does to a workload.

use super::outcome::Outcome;
use anyhow::Context as _;
use clusters::kueue::objects as kueue_objects;
use cucumber::gherkin::Step;
use cucumber::{given, then, when};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::assertions::{expected_yaml, object_matches};
use super::{patience, secs};
use crate::parameters::{Number, Subject, Whose, Within};
use crate::run_context::FLAVOR_TOLERATION_KEY;
use crate::wait::{self, Check};
use crate::world::AwWorld;

#[given(regex = r"^the ClusterQueue has a quota of (\d+) CPUs?$")]
async fn quota(w: &mut AwWorld, cpus: u32) -> Outcome {
    w.queue_spec.quota.cpu = cpus.to_string();
    w.apply_cluster_queue().await?;
    w.note(format!("ClusterQueue quota: {cpus} CPU"));
    Ok(())
}

/// ResourceFlavors of the scenario's own, one per table row `| flavor | node label |` (`key=value`),
/// named `<namespace>-<flavor>`; the ClusterQueue offers the quota on each, in the table's
/// order (Kueue tries them in that order for each podSet).
#[given(regex = r"^the ClusterQueue has (\d+) CPUs? on each of the ResourceFlavors:$")]
async fn flavors(w: &mut AwWorld, cpus: u32, step: &Step) -> Outcome {
    let table = step
        .table
        .as_ref()
        .context("this step needs a table: | flavor | node label |")?;
    for row in table.rows.iter().skip(1) {
        let [flavor, label] = row.as_slice() else {
            crate::fail!("expected | flavor | node label |, found {row:?}");
        };
        let (key, value) = label
            .split_once('=')
            .with_context(|| format!("a node label is key=value, found {label:?}"))?;
        let name = format!("{}-{flavor}", w.ns);
        let mut object = kueue_objects::resource_flavor(&name);
        object["spec"] = json!({
            "nodeLabels": { key: value },
            "tolerations": [{ "key": FLAVOR_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule" }],
        });
        kueue_objects::apply(&w.client, &object)
            .await
            .with_context(|| format!("creating ResourceFlavor {name}"))?;
        w.flavors.push(name);
    }
    w.queue_spec.quota.cpu = cpus.to_string();
    w.apply_cluster_queue().await?;
    w.note(format!(
        "ClusterQueue offers {cpus} CPU on each of {}",
        w.flavors.join(", ")
    ));
    Ok(())
}

#[given(regex = r"^the ClusterQueue preempts lower-priority workloads$")]
async fn preempts(w: &mut AwWorld) -> Outcome {
    w.queue_spec.preemption = Some("LowerPriority".into());
    Ok(w.apply_cluster_queue().await?)
}

#[given(regex = r#"^a WorkloadPriorityClass "([^"]+)" with value (\d+)$"#)]
async fn priority_class(w: &mut AwWorld, name: String, value: i32) -> Outcome {
    kueue_objects::apply(
        &w.client,
        &kueue_objects::workload_priority_class(&name, value),
    )
    .await
    .with_context(|| format!("creating WorkloadPriorityClass {name}"))?;
    Ok(())
}

async fn workload_name(w: &AwWorld, aw: &str) -> anyhow::Result<String> {
    let (client, ns) = (&w.client, w.ns.as_str());
    let workload = wait::eventually(
        secs(30),
        &format!("the Kueue Workload of {aw}"),
        move || async move {
            Ok(match objects::workload_of(client, ns, aw).await? {
                Some(w) => Check::Done(w),
                None => Check::NotYet("no Workload owned by the AppWrapper".into()),
            })
        },
    )
    .await?;
    workload["metadata"]["name"]
        .as_str()
        .map(str::to_string)
        .context("a Workload without a name")
}

async fn set_active(w: &mut AwWorld, subject: &Subject, active: bool) -> anyhow::Result<()> {
    let name = w.select(subject)?;
    let workload = workload_name(w, &name).await?;
    let api: Api<DynamicObject> = Api::namespaced_with(
        w.client.clone(),
        &w.ns,
        &kueue_objects::api_resource("Workload"),
    );
    api.patch(
        &workload,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"active": active}})),
    )
    .await
    .with_context(|| format!("setting spec.active={active} on Workload {workload}"))?;
    w.note(format!(
        "{} Workload {workload} of {name}",
        if active { "reactivated" } else { "deactivated" }
    ));
    Ok(())
}

#[when(expr = "Kueue deactivates {whose} workload")]
async fn deactivate(w: &mut AwWorld, subject: Whose) -> Outcome {
    Ok(set_active(w, &subject, false).await?)
}

#[when(expr = "Kueue reactivates {whose} workload")]
async fn reactivate(w: &mut AwWorld, subject: Whose) -> Outcome {
    Ok(set_active(w, &subject, true).await?)
}

#[then(expr = "{whose} workload matches{within}:")]
async fn workload_matches(
    w: &mut AwWorld,
    subject: Whose,
    seconds: Within,
    step: &Step,
) -> Outcome {
    let name = w.select(&subject)?;
    let expected = expected_yaml(w, step)?;
    let (client, ns, aw) = (&w.client, w.ns.as_str(), name.as_str());
    object_matches(
        &format!("the Workload of {name}"),
        &expected,
        patience(&seconds)?,
        move || objects::workload_of(client, ns, aw),
    )
    .await?;
    Ok(())
}

/// Read once: Kueue made no Workload of its own for a wrapped object (their controller owner
/// reference is the AppWrapper), and no second one for the AppWrapper.
#[then(expr = "{whose} workload is the only one in the namespace")]
async fn only_workload(w: &mut AwWorld, subject: Whose) -> Outcome {
    let name = w.select(&subject)?;
    let workloads = objects::workloads_in(&w.client, &w.ns).await?;
    if let [only] = workloads.as_slice()
        && objects::owned_by_appwrapper(only, &name)
    {
        return Ok(());
    }
    let found: Vec<String> = workloads
        .iter()
        .map(|workload| {
            format!(
                "Workload {} owned by [{}]",
                workload.metadata.name.as_deref().unwrap_or_default(),
                owners(workload)
            )
        })
        .collect();
    crate::fail!(
        "expected one Workload, owned by AppWrapper {name}; found {}:\n{}",
        found.len(),
        found.join("\n")
    )
}

/// `Kind name, Kind name` of an object's owner references.
fn owners(object: &DynamicObject) -> String {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| format!("{} {}", o.kind, o.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[then(expr = "the ClusterQueue has {int} admitted workload(s){within}")]
async fn admitted(w: &mut AwWorld, count: i64, seconds: Within) -> Outcome {
    let api: Api<DynamicObject> = Api::all_with(
        w.client.clone(),
        &kueue_objects::api_resource("ClusterQueue"),
    );
    let (api, cq) = (&api, w.cluster_queue.as_str());
    Ok(wait::expect(
        patience(&seconds)?,
        &format!("{count} admitted workload(s) in ClusterQueue {cq}"),
        move || async move {
            let queue = objects::to_value(&api.get(cq).await?);
            let status = &queue["status"];
            let admitted = status["admittedWorkloads"].as_i64().unwrap_or(0);
            let reserving = status["reservingWorkloads"].as_i64().unwrap_or(0);
            Ok(if admitted == count && reserving == count {
                Check::Done(())
            } else {
                Check::NotYet(crate::yaml::render(status))
            })
        },
    )
    .await?)
}

/// One Workload for each AppWrapper in the namespace, owned by it, and no Workload owned by
/// anything else (a wrapped object, nothing), read once. A Workload whose only owners are
/// AppWrappers that are gone is the garbage collector's to delete, not the controller's, and
/// is waited on for at most [`GARBAGE_COLLECTION`].
#[then(regex = r"^each AppWrapper has exactly one workload and no other workload exists$")]
async fn one_workload_each(w: &mut AwWorld) -> Outcome {
    let (client, ns) = (&w.client, w.ns.as_str());
    Ok(wait::eventually(
        GARBAGE_COLLECTION,
        "one Workload per AppWrapper and no other",
        move || async move {
            let appwrappers = objects::appwrappers(client, ns)
                .list(&kube::api::ListParams::default())
                .await
                .context("listing AppWrappers")?;
            let names: Vec<String> = appwrappers
                .items
                .iter()
                .filter_map(|a| a.metadata.name.clone())
                .collect();
            let workloads = objects::workloads_in(client, ns).await?;
            Ok(judge_workloads(&names, &workloads))
        },
    )
    .await?)
}

/// How long the Workload of a deleted AppWrapper may outlive it: Kueue lifts its finalizer and
/// the garbage collector deletes it, both of the stand.
const GARBAGE_COLLECTION: std::time::Duration = std::time::Duration::from_secs(30);

fn judge_workloads(appwrappers: &[String], workloads: &[DynamicObject]) -> Check<()> {
    let mut wrong = Vec::new();
    for name in appwrappers {
        let count = workloads
            .iter()
            .filter(|wl| objects::owned_by_appwrapper(wl, name))
            .count();
        if count != 1 {
            wrong.push(format!("AppWrapper {name} has {count} Workloads"));
        }
    }
    let mut uncollected = Vec::new();
    for workload in workloads {
        if appwrappers
            .iter()
            .any(|n| objects::owned_by_appwrapper(workload, n))
        {
            continue;
        }
        let line = format!(
            "Workload {} is owned by no AppWrapper here but by [{}]",
            workload.metadata.name.as_deref().unwrap_or_default(),
            owners(workload)
        );
        let owners = workload.metadata.owner_references.as_deref().unwrap_or(&[]);
        if !owners.is_empty() && owners.iter().all(|o| o.kind == "AppWrapper") {
            uncollected.push(format!("{line}, which are gone: not yet garbage-collected"));
        } else {
            wrong.push(line);
        }
    }
    let summary = format!(
        "{} AppWrappers, {} Workloads:",
        appwrappers.len(),
        workloads.len()
    );
    if !wrong.is_empty() {
        wrong.extend(uncollected);
        Check::Never(format!("{summary}\n{}", wrong.join("\n")))
    } else if !uncollected.is_empty() {
        Check::NotYet(format!("{summary}\n{}", uncollected.join("\n")))
    } else {
        Check::Done(())
    }
}

/// The CPU the ClusterQueue has reserved and counts as used, over its flavors, is `count`:
/// quota accounted once, not twice and not lost.
#[then(expr = "the ClusterQueue reserves {number} CPU(s){within}")]
async fn reserves(w: &mut AwWorld, cpus: Number, seconds: Within) -> Outcome {
    let api: Api<DynamicObject> = Api::all_with(
        w.client.clone(),
        &kueue_objects::api_resource("ClusterQueue"),
    );
    let (api, cq) = (&api, w.cluster_queue.as_str());
    let want = cpus.0;
    Ok(wait::expect(
        patience(&seconds)?,
        &format!("{cpus} CPU reserved and used in ClusterQueue {cq}"),
        move || async move {
            let queue = objects::to_value(&api.get(cq).await?);
            let status = &queue["status"];
            let reserved = cpu_total(&status["flavorsReservation"]);
            let used = cpu_total(&status["flavorsUsage"]);
            let close = |cpu: f64| (cpu - want).abs() < 1e-6;
            Ok(if close(reserved) && close(used) {
                Check::Done(())
            } else {
                Check::NotYet(format!("reserved {reserved} CPU, used {used} CPU"))
            })
        },
    )
    .await?)
}

/// The `cpu` totals of a ClusterQueue's `flavorsReservation` or `flavorsUsage`, summed.
fn cpu_total(flavors: &serde_json::Value) -> f64 {
    flavors
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["resources"].as_array().into_iter().flatten())
        .filter(|r| r["name"] == "cpu")
        .filter_map(|r| r["total"].as_str())
        .map(|q| match q.strip_suffix('m') {
            Some(milli) => milli.parse::<f64>().unwrap_or(f64::NAN) / 1000.0,
            None => q.parse::<f64>().unwrap_or(f64::NAN),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{cpu_total, judge_workloads};
    use crate::wait::Check;
    use kube::api::DynamicObject;
    use serde_json::json;

    fn workload(name: &str, owners: &[(&str, &str)]) -> DynamicObject {
        let refs: Vec<_> = owners
            .iter()
            .map(|(kind, owner)| {
                json!({"apiVersion": "v1", "kind": kind, "name": owner, "uid": owner})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": name, "ownerReferences": refs},
        }))
        .unwrap()
    }

    #[test]
    fn a_gone_appwrappers_workload_is_awaited_and_a_duplicate_or_stray_is_refused_at_once() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let kept = workload("wl-a", &[("AppWrapper", "a")]);
        let cases = [
            ("one each", names(&["a"]), vec![kept.clone()], "done"),
            (
                "a deleted AppWrapper's, not yet collected",
                names(&["a"]),
                vec![kept.clone(), workload("wl-b", &[("AppWrapper", "b")])],
                "not yet",
            ),
            (
                "two for one AppWrapper",
                names(&["a"]),
                vec![kept.clone(), workload("wl-a2", &[("AppWrapper", "a")])],
                "never",
            ),
            (
                "none for one",
                names(&["a", "b"]),
                vec![kept.clone()],
                "never",
            ),
            (
                "owned by a wrapped Job",
                names(&["a"]),
                vec![kept.clone(), workload("wl-job", &[("Job", "a-job")])],
                "never",
            ),
            (
                "owned by nothing",
                names(&["a"]),
                vec![kept.clone(), workload("wl-orphan", &[])],
                "never",
            ),
        ];
        for (case, appwrappers, workloads, want) in cases {
            let got = match judge_workloads(&appwrappers, &workloads) {
                Check::Done(()) => "done",
                Check::NotYet(_) => "not yet",
                Check::Never(_) => "never",
            };
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn cpu_totals_add_up_over_flavors_in_cores_and_millicores() {
        let flavors = json!([
            {"name": "a", "resources": [{"name": "cpu", "total": "2"}, {"name": "memory", "total": "1Gi"}]},
            {"name": "b", "resources": [{"name": "cpu", "total": "300m"}]},
        ]);
        assert!((cpu_total(&flavors) - 2.3).abs() < 1e-9);
        assert_eq!(cpu_total(&json!(null)), 0.0);
        assert!(cpu_total(&json!([{"resources": [{"name": "cpu", "total": "x"}]}])).is_nan());
    }
}
