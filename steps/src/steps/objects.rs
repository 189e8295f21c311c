//! The objects of a workload: its pods, its wrapped objects, the namespace's quota, and the
//! AppWrapper object itself being gone.

use super::outcome::Outcome;
use anyhow::Context as _;
use cucumber::gherkin::Step;
use cucumber::{given, then, when};
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::assertions::{expected_yaml, object_matches};
use super::pods::{describe, not_started_by_node};
use super::{patience, secs};
use crate::matcher;
use crate::parameters::{PodPhase, Subject, Whose, Within};
use crate::wait::{self, Check};
use crate::world::AwWorld;
use objects::pod_phase;

const QUOTA: &str = "awconf-no-pods";

/// Creates the scenario's ResourceQuota: at most `n` of `resource`.
async fn create_quota(w: &AwWorld, resource: &str, n: u32) -> anyhow::Result<Api<ResourceQuota>> {
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": QUOTA},
        "spec": {"hard": {resource: n.to_string()}},
    }))?;
    let quotas = Api::<ResourceQuota>::namespaced(w.client.clone(), &w.ns);
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .context("creating the ResourceQuota")?;
    Ok(quotas)
}

/// A ResourceQuota of zero pods (or Jobs): their creation is refused as long as it exists.
#[given(regex = r"^the namespace allows no (pods|Jobs)$")]
async fn allows_none(w: &mut AwWorld, what: String) -> Outcome {
    let resource = if what == "pods" {
        "pods"
    } else {
        "count/jobs.batch"
    };
    create_quota(w, resource, 0).await?;
    // Quota admission enforces `status.hard`, which the quota controller fills in; the probe
    // below waits for that.
    let probe = if what == "pods" {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "quota-probe-"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    } else {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "quota-probe-"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}})
    };
    let (api_version, kind) = if what == "pods" {
        ("v1", "Pod")
    } else {
        ("batch/v1", "Job")
    };
    let api = objects::dynamic_api(&w.client, &w.ns, api_version, kind).await?;
    let probe: kube::api::DynamicObject = serde_json::from_value(probe)?;
    let (api, probe) = (&api, &probe);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let dry_run = &dry_run;
    wait::eventually(
        secs(30),
        &format!("the ResourceQuota to refuse {what}"),
        move || async move {
            Ok(match api.create(dry_run, probe).await {
                Err(kube::Error::Api(e)) if e.code == 403 => Check::Done(()),
                Err(e) => return Err(e.into()),
                Ok(_) => Check::NotYet(format!("a dry-run {kind} was still accepted")),
            })
        },
    )
    .await?;
    w.note(format!("the namespace allows no {what}"));
    Ok(())
}

/// A ResourceQuota of `n` pods: a Job's further pods are refused, so only some of a workload's
/// pods are ever created. Waits until the quota controller has filled in `status.hard`, which
/// quota admission enforces.
#[given(regex = r"^the namespace allows only (\d+) pods?$")]
async fn allows_only(w: &mut AwWorld, n: u32) -> Outcome {
    let quotas = &create_quota(w, "pods", n).await?;
    wait::eventually(
        secs(30),
        "the quota controller to fill in the ResourceQuota's status",
        move || async move {
            let quota = quotas.get(QUOTA).await?;
            let hard = quota.status.and_then(|s| s.hard).unwrap_or_default();
            Ok(if hard.contains_key("pods") {
                Check::Done(())
            } else {
                Check::NotYet("status.hard has no pods yet".to_string())
            })
        },
    )
    .await?;
    w.note(format!("the namespace allows only {n} pods"));
    Ok(())
}

#[when(regex = r"^the namespace allows (pods|Jobs) again$")]
async fn allows_again(w: &mut AwWorld, what: String) -> Outcome {
    Api::<ResourceQuota>::namespaced(w.client.clone(), &w.ns)
        .delete(QUOTA, &DeleteParams::default())
        .await
        .context("deleting the ResourceQuota")?;
    w.note(format!("the namespace allows {what} again"));
    Ok(())
}

#[then(expr = "{int} pod(s) of {subject} is/are {pod_phase}{within}")]
async fn pods_in_phase(
    w: &mut AwWorld,
    count: usize,
    subject: Subject,
    phase: PodPhase,
    seconds: Within,
) -> Outcome {
    let name = w.select(&subject)?;
    let (client, ns, aw, wanted) = (&w.client, w.ns.as_str(), name.as_str(), phase.as_str());
    let what = format!("{count} {phase} pod(s) of AppWrapper {name}");
    let waited = wait::expect(patience(&seconds)?, &what, move || async move {
        let pods = objects::pods_of(client, ns, aw).await?;
        let n = pods
            .iter()
            .filter(|p| pod_phase(p) == wanted && p.metadata.deletion_timestamp.is_none())
            .count();
        Ok(if n == count {
            Check::Done(())
        } else {
            Check::NotYet(describe(&pods))
        })
    })
    .await;
    if waited.is_err()
        && wanted == "Running"
        && let Ok(pods) = objects::pods_of(client, ns, aw).await
        && let Some(why) = not_started_by_node(&pods, count, k8s_openapi::jiff::Timestamp::now())
    {
        w.undecided(why);
    }
    Ok(waited?)
}

/// Waits for KWOK to have failed a pod: a Failed pod of it, or, where the controller already
/// found it and reset the workload (deleting that pod), its Unhealthy condition with reason
/// FoundFailedPods. A controller that looks at failed pods at once may reset before a poll
/// sees the pod Failed; that must not fail the scenario.
#[then(expr = "a pod of {subject} has failed{within}")]
async fn pod_has_failed(w: &mut AwWorld, subject: Subject, seconds: Within) -> Outcome {
    let name = w.select(&subject)?;
    let (client, ns, aw) = (&w.client, w.ns.as_str(), name.as_str());
    let what = format!("a failed pod of AppWrapper {name}");
    Ok(
        wait::expect(patience(&seconds)?, &what, move || async move {
            let pods = objects::pods_of(client, ns, aw).await?;
            if pods.iter().any(|p| pod_phase(p) == "Failed") {
                return Ok(Check::Done(()));
            }
            let found = objects::get_appwrapper(client, ns, aw)
                .await?
                .as_ref()
                .and_then(|a| objects::condition(a, "Unhealthy"))
                .is_some_and(|c| c["status"] == "True" && c["reason"] == "FoundFailedPods");
            Ok(if found {
                Check::Done(())
            } else {
                Check::NotYet(describe(&pods))
            })
        })
        .await?,
    )
}

#[then(expr = "no pod of {subject} remains{within}")]
async fn no_pod(w: &mut AwWorld, subject: Subject, seconds: Within) -> Outcome {
    let name = w.select(&subject)?;
    let (client, ns, aw) = (&w.client, w.ns.as_str(), name.as_str());
    Ok(wait::expect(
        patience(&seconds)?,
        &format!("no pod of AppWrapper {name}"),
        move || async move {
            let pods = objects::pods_of(client, ns, aw).await?;
            Ok(if pods.is_empty() {
                Check::Done(())
            } else {
                Check::NotYet(describe(&pods))
            })
        },
    )
    .await?)
}

#[then(expr = "no wrapped object of {subject} remains{within}")]
async fn no_object(w: &mut AwWorld, subject: Subject, seconds: Within) -> Outcome {
    let name = w.select(&subject)?;
    let aw = w.existing(&name).await?;
    let (client, ns, aw) = (&w.client, w.ns.as_str(), &aw);
    Ok(wait::expect(
        patience(&seconds)?,
        &format!("no wrapped object of AppWrapper {name}"),
        move || async move {
            let left = objects::remaining_objects(client, ns, aw).await?;
            Ok(if left.is_empty() {
                Check::Done(())
            } else {
                Check::NotYet(left.join(", "))
            })
        },
    )
    .await?)
}

#[then(expr = "{whose} pods match{within}:")]
async fn pods_match(w: &mut AwWorld, subject: Whose, seconds: Within, step: &Step) -> Outcome {
    let name = w.select(&subject)?;
    let expected = expected_yaml(w, step)?;
    let what = format!("every pod of AppWrapper {name}");
    Ok(all_pods_match(w, &name, &what, &expected, patience(&seconds)?, &|_| true).await?)
}

/// The pods of component N (1-based, in `status.componentStatus`): the Pod itself, or the pods
/// the object owns directly (a Job's, a StatefulSet's; not a Deployment's).
#[then(expr = "the pods of (its )component {int} match{within}:")]
async fn component_pods_match(
    w: &mut AwWorld,
    index: usize,
    seconds: Within,
    step: &Step,
) -> Outcome {
    let name = w.select(&Subject(None))?;
    let expected = expected_yaml(w, step)?;
    let aw = w.existing(&name).await?;
    let status = index
        .checked_sub(1)
        .and_then(|i| aw["status"]["componentStatus"].get(i))
        .with_context(|| format!("AppWrapper {name} has no component {index}"))?;
    let (kind, object) = (
        status["kind"].as_str().unwrap_or_default(),
        status["name"].as_str().unwrap_or_default(),
    );
    crate::require!(
        !object.is_empty(),
        "component {index} of {name} has no object yet"
    );
    let what = format!("every pod of {kind} {object} (component {index} of {name})");
    let made_here = |pod: &Pod| made_by(pod, kind, object);
    Ok(all_pods_match(w, &name, &what, &expected, patience(&seconds)?, &made_here).await?)
}

/// Whether `pod` is the wrapped object `kind`/`name` or directly owned by it.
fn made_by(pod: &Pod, kind: &str, name: &str) -> bool {
    let is_it = kind == "Pod" && pod.metadata.name.as_deref() == Some(name);
    is_it
        || pod
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == kind && o.name == name)
}

/// Waits until the AppWrapper has pods that `chosen` selects and every one of them matches.
async fn all_pods_match(
    w: &AwWorld,
    name: &str,
    what: &str,
    expected: &serde_json::Value,
    patience: crate::wait::Patience,
    chosen: &dyn Fn(&Pod) -> bool,
) -> anyhow::Result<()> {
    let (client, ns) = (&w.client, w.ns.as_str());
    wait::expect(patience, &format!("{what} to match"), move || async move {
        let pods: Vec<Pod> = objects::pods_of(client, ns, name)
            .await?
            .into_iter()
            .filter(|p| chosen(p))
            .collect();
        if pods.is_empty() {
            return Ok(Check::NotYet("no pods".into()));
        }
        for pod in &pods {
            let value = objects::to_value(pod);
            if !matcher::matches(expected, &value) {
                return Ok(Check::NotYet(format!(
                    "pod {}:\n{}\nlast object seen:\n{}",
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    matcher::explain(expected, &value),
                    crate::yaml::render_object(&value)
                )));
            }
        }
        Ok(Check::Done(()))
    })
    .await
}

#[then(expr = "{whose} wrapped {word} matches{within}:")]
async fn wrapped_matches(
    w: &mut AwWorld,
    subject: Whose,
    kind: String,
    seconds: Within,
    step: &Step,
) -> Outcome {
    let name = w.select(&subject)?;
    let expected = expected_yaml(w, step)?;
    let aw = w.existing(&name).await?;
    let (api_version, kind, object) = objects::components_of(&aw)
        .into_iter()
        .find(|(_, k, _)| *k == kind)
        .with_context(|| format!("AppWrapper {name} names no {kind} in its status"))?;
    let (client, ns) = (&w.client, w.ns.as_str());
    let (api_version, kind_ref, object_ref) =
        (api_version.as_str(), kind.as_str(), object.as_str());
    object_matches(
        &format!("{kind} {object}"),
        &expected,
        patience(&seconds)?,
        move || objects::get_object(client, ns, api_version, kind_ref, object_ref),
    )
    .await?;
    Ok(())
}

#[then(expr = "{subject} is gone{within}")]
async fn gone(w: &mut AwWorld, subject: Subject, within: Within) -> Outcome {
    let name = w.select(&subject)?;
    let (world, aw) = (&*w, name.as_str());
    wait::expect(
        patience(&within.0)?,
        &format!("AppWrapper {name} to be gone"),
        move || async move {
            Ok(match world.appwrapper(aw).await? {
                None => Check::Done(()),
                Some(object) => Check::NotYet(super::assertions::state_view(&object)),
            })
        },
    )
    .await?;
    w.note(format!("{name} is gone"));
    Ok(())
}

/// The objects of `kind` in the namespace, counted by UID over `seconds`: an object created
/// again (a second `generateName` creation, or one deleted and made anew) is a second one
/// even if the first is gone by the next read.
#[then(
    regex = r"^exactly (\d+) (Job|Pod|Deployment|StatefulSet|Service)s? (?:is|are) ever seen in the namespace over (\d+) seconds$"
)]
async fn ever_seen(w: &mut AwWorld, n: usize, kind: String, seconds: u64) -> Outcome {
    let api_version = match kind.as_str() {
        "Job" => "batch/v1",
        "Deployment" | "StatefulSet" => "apps/v1",
        _ => "v1",
    };
    let api = objects::dynamic_api(&w.client, &w.ns, api_version, &kind).await?;
    let seen = std::sync::Mutex::new(std::collections::BTreeMap::<String, String>::new());
    let (api, seen_ref, kind_ref) = (&api, &seen, kind.as_str());
    wait::always(
        secs(seconds),
        &format!("exactly {n} {kind} ever seen"),
        move || async move {
            let listed = api.list(&Default::default()).await?;
            let mut seen = seen_ref.lock().map_err(|e| anyhow::anyhow!("{e}"))?;
            for object in listed.items {
                seen.insert(
                    object.metadata.uid.unwrap_or_default(),
                    object.metadata.name.unwrap_or_default(),
                );
            }
            Ok((seen.len() > n).then(|| {
                let names: Vec<&String> = seen.values().collect();
                format!("{} {kind_ref}s seen: {names:?}", seen.len())
            }))
        },
    )
    .await?;
    let count = seen.lock().map(|s| s.len()).unwrap_or_default();
    crate::require!(
        count == n,
        "expected exactly {n} {kind} over {seconds} seconds, saw {count}"
    );
    w.note(format!("{count} {kind} seen over {seconds} seconds"));
    Ok(())
}
