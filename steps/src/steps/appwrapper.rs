//! Defining, submitting, changing and deleting AppWrappers.

use super::outcome::Outcome;
use anyhow::Context as _;
use appwrapper_controller::api::QUEUE_NAME_LABEL;
use cucumber::gherkin::Step;
use cucumber::{given, when};
use serde_json::{Value, json};

use crate::annotations;
use crate::fixtures::{self, PodSteer};
use crate::parameters::{Quoted, Subject, Whose};
use crate::run_context::FLAVOR_TOLERATION_KEY;
use crate::under_test::OWN_CONTROLLER_LABEL;
use crate::world::{AwWorld, LOCAL_QUEUE, Undo};
use crate::yaml;

fn docstring(w: &AwWorld, step: &Step) -> anyhow::Result<Value> {
    let text = step
        .docstring
        .as_deref()
        .context("this step needs a doc string")?;
    let text = yaml::substitute(text, &[("namespace", &w.ns), ("queue", LOCAL_QUEUE)]);
    yaml::parse(&text)
}

fn define(w: &mut AwWorld, name: &str, aw: Value) {
    w.note(format!("defined AppWrapper {name}"));
    w.drafts.insert(name.to_string(), aw);
    w.current = Some(name.to_string());
}

#[given(regex = r#"^an AppWrapper "([^"]+)" wrapping (.+)$"#)]
async fn wrapping(w: &mut AwWorld, name: String, what: String) -> Outcome {
    let components = fixtures::components(&name, &what)?;
    define(w, &name, fixtures::appwrapper(&name, components));
    Ok(())
}

#[given(regex = r#"^an AppWrapper "([^"]+)" with the components:$"#)]
async fn with_components(w: &mut AwWorld, name: String, step: &Step) -> Outcome {
    let components = docstring(w, step)?;
    let list = components
        .as_array()
        .cloned()
        .context("the components must be a YAML list")?;
    define(w, &name, fixtures::appwrapper(&name, list));
    Ok(())
}

#[given(regex = r#"^an AppWrapper "([^"]+)" defined by:$"#)]
async fn defined_by(w: &mut AwWorld, name: String, step: &Step) -> Outcome {
    let mut aw = docstring(w, step)?;
    if !aw.is_object() {
        crate::fail!("the AppWrapper must be a YAML map");
    }
    let defaults = fixtures::appwrapper(&name, Vec::new());
    for key in ["apiVersion", "kind"] {
        if aw.get(key).is_none() {
            aw[key] = defaults[key].clone();
        }
    }
    aw["metadata"]["name"] = json!(name);
    define(w, &name, aw);
    Ok(())
}

/// Steers the pod templates of a defined AppWrapper (all, or component `only`); pods held by
/// a finalizer are released when the scenario ends, whatever happened.
fn steer_pods(
    w: &mut AwWorld,
    subject: &Subject,
    only: Option<usize>,
    behaviour: &str,
) -> anyhow::Result<()> {
    let steer: PodSteer = behaviour.parse().map_err(anyhow::Error::msg)?;
    fixtures::steer_templates(w.draft_mut(subject)?, only, &steer)?;
    if steer == PodSteer::CarryFinalizer {
        let namespace = w.ns.clone();
        w.undo.push(Undo::PodFinalizers { namespace });
    }
    Ok(())
}

#[given(expr = "{whose} pods {}")]
async fn its_pods(w: &mut AwWorld, subject: Whose, behaviour: String) -> Outcome {
    Ok(steer_pods(w, &subject, None, &behaviour)?)
}

#[given(regex = r#"^the pods of (?:its )?component (\d+) (.+)$"#)]
async fn component_pods(w: &mut AwWorld, index: usize, behaviour: String) -> Outcome {
    Ok(steer_pods(w, &Subject(None), Some(index), &behaviour)?)
}

/// Sets an annotation given by its full key.
fn set_annotation(aw: &mut Value, full_key: &str, value: &str) {
    let annotations = &mut aw["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[full_key] = json!(value);
}

#[given(expr = "{subject} has the annotation(s):")]
async fn annotations(w: &mut AwWorld, subject: Subject, step: &Step) -> Outcome {
    let table = step
        .table
        .as_ref()
        .context("this step needs a table: | key | value |")?;
    let pairs = annotations::table(&table.rows)?;
    let aw = w.draft_mut(&subject)?;
    for (key, value) in &pairs {
        set_annotation(aw, key, value);
    }
    Ok(())
}

#[given(expr = "{whose} annotation {quoted} is {quoted}")]
async fn annotation(w: &mut AwWorld, subject: Whose, key: Quoted, value: Quoted) -> Outcome {
    set_annotation(w.draft_mut(&subject)?, &annotations::key(&key)?, &value);
    Ok(())
}

#[given(expr = "{subject} has priority class {quoted}")]
async fn priority(w: &mut AwWorld, subject: Subject, class: Quoted) -> Outcome {
    let aw = w.draft_mut(&subject)?;
    aw["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!(class);
    Ok(())
}

#[given(expr = "{whose} spec.managedBy is {quoted}")]
async fn managed_by(w: &mut AwWorld, subject: Whose, manager: Quoted) -> Outcome {
    w.draft_mut(&subject)?["spec"]["managedBy"] = json!(manager);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Submission {
    Queued,
    Unmanaged { suspended: bool },
}

async fn submit(w: &mut AwWorld, subject: &Subject, how: Submission) -> anyhow::Result<()> {
    let name = w.select(subject)?;
    let mut aw = w
        .drafts
        .remove(&name)
        .with_context(|| format!("AppWrapper {name} was not defined (or was already submitted)"))?;
    aw["metadata"]["namespace"] = json!(w.ns);
    // On a cluster of its own the scenario's controller is the only one, and takes all.
    if let Some(own) = &w.own_controller
        && w.own_cluster.is_none()
    {
        let label = own.own_label().unwrap_or(&w.ns).to_owned();
        set_label(&mut aw, OWN_CONTROLLER_LABEL, &label);
    }
    match how {
        Submission::Queued => set_label(&mut aw, QUEUE_NAME_LABEL, LOCAL_QUEUE),
        Submission::Unmanaged { suspended } => {
            if suspended {
                aw["spec"]["suspend"] = json!(true);
            }
            place_on_fake_nodes(&mut aw);
        }
    }
    objects::create_appwrapper(&w.client, &aw).await?;
    w.submitted.push(name.clone());
    w.note(format!(
        "submitted AppWrapper {name}{}",
        match how {
            Submission::Queued => " to the LocalQueue",
            Submission::Unmanaged { suspended: false } => " outside Kueue",
            Submission::Unmanaged { suspended: true } => " outside Kueue, suspended",
        }
    ));
    Ok(())
}

fn set_label(aw: &mut Value, key: &str, value: &str) {
    if !aw["metadata"]["labels"].is_object() {
        aw["metadata"]["labels"] = json!({});
    }
    aw["metadata"]["labels"][key] = json!(value);
}

/// Outside Kueue no flavor places the pods, so the suite does what a user of KWOK does: the
/// pod templates select the fake nodes and tolerate their taint (where fake nodes share the
/// cluster with real ones, only that keeps the pods off the real nodes).
fn place_on_fake_nodes(aw: &mut Value) {
    let toleration =
        json!({ "key": FLAVOR_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule" });
    place_pods(aw, ("type", "kwok"), &toleration);
}

/// Makes every pod template of `aw` select nodes labelled `label` and tolerate `toleration`.
pub fn place_pods(aw: &mut Value, label: (&str, &str), toleration: &Value) {
    let Some(components) = aw["spec"]["components"].as_array_mut() else {
        return;
    };
    for component in components {
        let template = &mut component["template"];
        let pod_spec = if template["kind"] == "Pod" {
            &mut template["spec"]
        } else if template["spec"]["template"]["spec"].is_object() {
            &mut template["spec"]["template"]["spec"]
        } else {
            continue;
        };
        if !pod_spec["nodeSelector"].is_object() {
            pod_spec["nodeSelector"] = json!({});
        }
        pod_spec["nodeSelector"][label.0] = json!(label.1);
        match pod_spec["tolerations"].as_array_mut() {
            Some(list) => list.push(toleration.clone()),
            None => pod_spec["tolerations"] = json!([toleration]),
        }
    }
}

#[given(expr = "{subject} is submitted to the LocalQueue")]
#[when(expr = "{subject} is submitted to the LocalQueue")]
async fn submitted(w: &mut AwWorld, subject: Subject) -> Outcome {
    Ok(submit(w, &subject, Submission::Queued).await?)
}

#[given(expr = "{subject} is created outside Kueue")]
#[when(expr = "{subject} is created outside Kueue")]
async fn created_unmanaged(w: &mut AwWorld, subject: Subject) -> Outcome {
    Ok(submit(w, &subject, Submission::Unmanaged { suspended: false }).await?)
}

#[given(expr = "{subject} is created suspended outside Kueue")]
#[when(expr = "{subject} is created suspended outside Kueue")]
async fn created_suspended(w: &mut AwWorld, subject: Subject) -> Outcome {
    Ok(submit(w, &subject, Submission::Unmanaged { suspended: true }).await?)
}

/// Writes the status as a controller would (a merge patch of the status subresource), for an
/// AppWrapper no controller manages (`spec.managedBy` names another): what the invariant
/// monitor must judge, whoever wrote it. `${now}` in the YAML is the current time.
#[when(expr = "{whose} status is written as:")]
async fn write_status(w: &mut AwWorld, subject: Whose, step: &Step) -> Outcome {
    let name = w.select(&subject)?;
    let text = step
        .docstring
        .as_deref()
        .context("this step needs a doc string")?;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let patch = yaml::parse(&yaml::substitute(text, &[("now", &now)]))?;
    objects::appwrappers(&w.client, &w.ns)
        .patch_status(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .with_context(|| format!("writing the status of AppWrapper {name}"))?;
    w.note(format!("wrote the status of {name}"));
    Ok(())
}

#[when(expr = "{whose} spec.suspend is set to {word}")]
async fn set_suspend(w: &mut AwWorld, subject: Whose, suspend: bool) -> Outcome {
    let name = w.select(&subject)?;
    objects::patch_appwrapper(
        &w.client,
        &w.ns,
        &name,
        &json!({"spec": {"suspend": suspend}}),
    )
    .await?;
    w.note(format!("set spec.suspend={suspend} on {name}"));
    Ok(())
}

#[when(expr = "{whose} annotation {quoted} is set to {quoted}")]
async fn set_live_annotation(
    w: &mut AwWorld,
    subject: Whose,
    key: Quoted,
    value: Quoted,
) -> Outcome {
    let name = w.select(&subject)?;
    let patch = json!({"metadata": {"annotations": {annotations::key(&key)?: value}}});
    objects::patch_appwrapper(&w.client, &w.ns, &name, &patch).await?;
    w.note(format!("annotated {name}: {key}={value}"));
    Ok(())
}

/// The annotation [`updated`] writes: nothing reads it, and changing it is an update.
const UPDATED_ANNOTATION: &str = "awconf.dev/updated";

/// An update that changes nothing a controller reads. A controller looks at an AppWrapper again
/// on every update of it, its metadata included (FT-UPDATE-LOOKS), so it finds at once what it
/// would otherwise find only on its periodic look, such as a failed pod (up to 60 s later).
#[when(expr = "{subject} is updated")]
async fn updated(w: &mut AwWorld, subject: Subject) -> Outcome {
    let name = w.select(&subject)?;
    let stamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let patch = json!({"metadata": {"annotations": {UPDATED_ANNOTATION: stamp}}});
    objects::patch_appwrapper(&w.client, &w.ns, &name, &patch).await?;
    w.note(format!("updated {name} ({UPDATED_ANNOTATION}={stamp})"));
    Ok(())
}

#[when(expr = "{subject} is deleted")]
async fn deleted(w: &mut AwWorld, subject: Subject) -> Outcome {
    let name = w.select(&subject)?;
    objects::appwrappers(&w.client, &w.ns)
        .delete(&name, &kube::api::DeleteParams::background())
        .await
        .with_context(|| format!("deleting AppWrapper {name}"))?;
    w.note(format!("deleted AppWrapper {name}"));
    Ok(())
}

#[when(expr = "{whose} wrapped {word} is deleted")]
async fn component_deleted(w: &mut AwWorld, subject: Whose, kind: String) -> Outcome {
    let name = w.select(&subject)?;
    let aw = w.existing(&name).await?;
    let (api_version, kind, object) = objects::components_of(&aw)
        .into_iter()
        .find(|(_, k, _)| *k == kind)
        .with_context(|| format!("AppWrapper {name} has no deployed {kind}"))?;
    objects::delete_object(&w.client, &w.ns, &api_version, &kind, &object).await?;
    w.note(format!("deleted the wrapped {kind} {object} of {name}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_are_added_to_those_already_set() {
        let mut aw = json!({"metadata": {"name": "x", "annotations": {"a/b": "c"}}});
        set_annotation(&mut aw, "workload.codeflare.dev.appwrapper/retryLimit", "1");
        assert_eq!(
            aw["metadata"]["annotations"],
            json!({"a/b": "c", "workload.codeflare.dev.appwrapper/retryLimit": "1"})
        );
    }
}
