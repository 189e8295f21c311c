//! The scenario hooks. Before: the serial lock, the namespace and the queues. After: the
//! controller running again, undo of node changes, the artifacts of a failure, cleanup of the
//! AppWrappers (bounded, reporting what is left), and the invariant monitor's verdict.
//! A problem found after the last step fails the scenario (the hook panics, which cucumber
//! reports as a failed After hook).

use std::time::Duration;

use cucumber::event::ScenarioFinished;
use cucumber::gherkin::{Feature, Rule, Scenario};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::environment::local::take_over;
use crate::failure_bundle;
use crate::report::gherkin::ScenarioText;
use crate::report::{ScenarioRecord, events};
use crate::serial_offers::{Isolation, Offers};
use crate::under_test::ControllerUnderTest;
use crate::world::{AwWorld, Undo};

/// How long cleanup waits for the AppWrappers of a scenario to be gone.
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(90);

/// The tag of scenarios that stop the controller under test but need not run alone where
/// the harness can give them a controller of their own.
pub const OWN_CONTROLLER_TAG: &str = "own-controller";

/// What the scenario gets of what the run `offers`: tagged `@own-controller` or
/// `@kueue-upgrade`, what is offered to those.
pub fn isolation(
    offers: Offers,
    feature: &Feature,
    rule: Option<&Rule>,
    scenario: &Scenario,
) -> Isolation {
    if has_tag(feature, rule, scenario, OWN_CONTROLLER_TAG) {
        offers.own_controller
    } else if has_tag(feature, rule, scenario, crate::options::KUEUE_UPGRADE_TAG) {
        offers.kueue_upgrade
    } else {
        Isolation::Alone
    }
}

/// Whether the scenario runs alone: tagged `@serial`, and given nothing of its own.
pub fn is_serial(
    offers: Offers,
    feature: &Feature,
    rule: Option<&Rule>,
    scenario: &Scenario,
) -> bool {
    has_tag(feature, rule, scenario, "serial")
        && isolation(offers, feature, rule, scenario) == Isolation::Alone
}

fn has_tag(feature: &Feature, rule: Option<&Rule>, scenario: &Scenario, tag: &str) -> bool {
    feature
        .tags
        .iter()
        .chain(rule.iter().flat_map(|r| r.tags.iter()))
        .chain(scenario.tags.iter())
        .any(|t| t == tag)
}

pub async fn before(
    feature: &Feature,
    rule: Option<&Rule>,
    scenario: &Scenario,
    world: &mut AwWorld,
) {
    let offers = world.h.isolation;
    let serial = is_serial(offers, feature, rule, scenario);
    let isolation = isolation(offers, feature, rule, scenario);
    let upgrades_kueue = has_tag(feature, rule, scenario, crate::options::KUEUE_UPGRADE_TAG);
    if let Err(e) = world
        .setup(
            &feature.name,
            &scenario.name,
            serial,
            upgrades_kueue,
            isolation,
        )
        .await
    {
        // The harness boundary: cucumber turns this into a failed Before hook.
        panic!("setting up the scenario failed: {e:#}");
    }
}

fn panic_text(info: &(dyn std::any::Any + Send)) -> String {
    info.downcast_ref::<String>()
        .cloned()
        .or_else(|| info.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(panic)".into())
}

pub async fn after(
    feature: &Feature,
    rule: Option<&Rule>,
    scenario: &Scenario,
    finished: &ScenarioFinished,
    world: Option<&mut AwWorld>,
) {
    let text = ScenarioText::of(feature, rule, scenario);
    let step_failure = match finished {
        ScenarioFinished::StepPassed => None,
        ScenarioFinished::StepSkipped => {
            Some("a step has no definition or was skipped".to_string())
        }
        ScenarioFinished::StepFailed(_, _, error) => Some(error.to_string()),
        ScenarioFinished::BeforeHookFailed(info) => Some(panic_text(info.as_ref())),
    };
    let Some(w) = world else {
        if let Ok(h) = crate::run_context::current() {
            h.record(ScenarioRecord {
                feature: feature.name.clone(),
                scenario: scenario.name.clone(),
                failure: Some(
                    step_failure.unwrap_or_else(|| "the World could not be created".into()),
                ),
                text,
                finished_at: Some(chrono::Utc::now()),
                ..ScenarioRecord::default()
            });
        }
        return;
    };
    let problems = finish(w, text, step_failure.clone()).await;
    w.guard = None;
    if !problems.is_empty() {
        panic!("{}", problems.join("\n\n"));
    }
}

/// Everything after the last step; returns the problems that fail the scenario.
async fn finish(w: &mut AwWorld, text: ScenarioText, step_failure: Option<String>) -> Vec<String> {
    let mut problems = Vec::new();
    if w.ns.is_empty() {
        record(w, text, step_failure, None, Vec::new(), None);
        return problems;
    }
    // A controller upgrade that did not happen: the controller under test takes over, so that
    // the scenarios after this one meet it.
    if let Some(mut from) = w.upgrade_from.take() {
        if let Err(e) = from.stop().await {
            problems.push(format!(
                "stopping the controller the upgrade started from: {e:#}"
            ));
        }
        let mut controller = w.h.controller.lock().await;
        match take_over(&mut controller, &w.h.client, &w.h.watch_client).await {
            Ok(()) if step_failure.is_none() => problems.push(format!(
                "the @{} scenario ended while {} still ran (the After hook upgraded it)",
                crate::options::CONTROLLER_UPGRADE_TAG,
                from.mode().describe()
            )),
            Ok(()) => {}
            Err(e) => problems.push(format!(
                "the controller under test could not take over again: {e:#}"
            )),
        }
    }
    let watch_client = w.watch_client().clone();
    if let Some(own) = &mut w.own_controller {
        if !own.is_running()
            && let Err(e) = own.start(&watch_client).await
        {
            problems.push(format!(
                "the scenario's own controller could not be started again: {e:#}"
            ));
        }
    } else {
        let mut controller = w.h.controller.lock().await;
        if let Some(settings) = w.settings_to_restore.take() {
            if let Err(e) = controller
                .restart_with(&w.h.client, &w.h.watch_client, settings)
                .await
            {
                problems.push(format!(
                    "the controller could not be restarted with the run's settings: {e:#}"
                ));
            }
        } else if !controller.is_running()
            && let Err(e) = controller.start(&w.h.watch_client).await
        {
            problems.push(format!("the controller could not be started again: {e:#}"));
        }
    }
    // Every scenario after this one meets the Kueue under test, even when this one (the
    // upgrade scenario: no other runs while the upgrade is to come) failed before upgrading.
    if let Some(pending) = w.h.kueue_upgrade_pending() {
        match pending.upgrade().await {
            Ok(_) if step_failure.is_none() => problems.push(format!(
                "the @kueue-upgrade scenario ended without upgrading Kueue from {} (the After \
                 hook did)",
                pending.from
            )),
            Ok(_) => {}
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    for undo in std::mem::take(&mut w.undo) {
        if let Err(e) = revert(&w.client, &undo).await {
            problems.push(format!("undoing {undo:?}: {e:#}"));
        }
    }
    let mut artifacts_dir = None;
    if let Some(failure) = &step_failure {
        artifacts_dir = save_artifacts(w, failure).await;
    }
    let keep = step_failure.is_some() && w.h.options.keep_on_failure;
    if keep {
        w.note(format!("kept namespace {} (keep-on-failure)", w.ns));
    } else {
        problems.extend(cleanup(w).await);
    }
    w.monitor()
        .settle(&w.ns, crate::monitor::audit_log::SETTLE)
        .await;
    let violations = w.monitor().violations_in(&w.ns);
    let undecided = w.undecided.lock().ok().and_then(|u| u.clone());
    let inconclusive = inconclusive(step_failure.is_some(), undecided, &problems, &violations);
    for violation in violations {
        problems.push(format!("invariant violated: {violation}"));
    }
    if !problems.is_empty() && artifacts_dir.is_none() {
        artifacts_dir = save_artifacts(w, &problems.join("\n\n")).await;
    }
    let failure = match (step_failure, problems.is_empty()) {
        (None, true) => None,
        (Some(f), true) => Some(f),
        (f, false) => Some(
            f.into_iter()
                .chain(problems.iter().cloned())
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    };
    let inferred = w.monitor().inferred_in(&w.ns);
    let watch_errors = w.monitor().watch_errors();
    if inferred > 0 || watch_errors > 0 {
        w.note(format!(
            "the monitor inferred {inferred} phase changes here across re-lists of its watch \
             (each a violation unless the re-list showed nothing was missed); its watch met \
             {watch_errors} errors in the run so far"
        ));
    }
    for retried in clusters::webhook_retry::retries_in(&w.ns) {
        w.note(format!(
            "a write was made again, its webhook call having broken off: {retried}"
        ));
    }
    let events = events::list(&w.client, &w.ns).await.unwrap_or_else(|e| {
        tracing::warn!("events of {}: {e}", w.ns);
        Vec::new()
    });
    record(w, text, failure, artifacts_dir, events, inconclusive);
    if !keep && let Err(e) = delete_namespace(w).await {
        tracing::warn!("deleting namespace {}: {e:#}", w.ns);
    }
    if let Some(own) = w.own_controller.take() {
        release_own_controller(w, own, keep).await;
    }
    if let Some(own) = w.own_cluster.take() {
        w.h.monitor.absorb(&own.monitor);
        // Stopping its processes waits for each.
        if let Err(e) = tokio::task::spawn_blocking(move || drop(own)).await {
            tracing::warn!("stopping the own cluster of {}: {e}", w.ns);
        }
    }
    problems
}

/// Gives a scenario's own controller pod back for the next scenario when it runs and its
/// AppWrappers are gone; otherwise (or where each scenario makes its own) removes it.
async fn release_own_controller(w: &AwWorld, mut own: ControllerUnderTest, kept: bool) {
    let Some(pods) = &w.h.own_controller_pods else {
        if let Err(e) = own.remove().await {
            tracing::warn!("stopping the own controller of {}: {e:#}", w.ns);
        }
        return;
    };
    let clean = !kept
        && own.is_running()
        && objects::appwrappers(&w.client, &w.ns)
            .list(&ListParams::default())
            .await
            .is_ok_and(|left| left.items.is_empty());
    if clean {
        pods.give_back(own);
    } else {
        pods.retire(own).await;
    }
}

/// Why a scenario's failure says nothing of the controller, when it does not: its step
/// failed only because it could not judge (`undecided`), or it failed only for states the
/// monitor could not check; in both, with nothing else wrong.
fn inconclusive(
    step_failed: bool,
    undecided: Option<String>,
    problems: &[String],
    violations: &[crate::monitor::Violation],
) -> Option<String> {
    if !problems.is_empty() || !violations.iter().all(|v| v.is_unchecked()) {
        return None;
    }
    match (step_failed, undecided) {
        (true, Some(why)) => Some(format!("a step could not judge what it checks: {why}")),
        (false, _) if !violations.is_empty() => Some(
            "the monitor could not check some of its states (see the failure) and found \
             nothing wrong in those it checked"
                .to_string(),
        ),
        _ => None,
    }
}

async fn save_artifacts(w: &AwWorld, failure: &str) -> Option<std::path::PathBuf> {
    match failure_bundle::collect(w, failure).await {
        Ok(dir) => Some(dir),
        Err(e) => {
            tracing::warn!("artifacts of {}: {e:#}", w.ns);
            None
        }
    }
}

fn record(
    w: &AwWorld,
    text: ScenarioText,
    failure: Option<String>,
    artifacts: Option<std::path::PathBuf>,
    events: Vec<events::EventRecord>,
    inconclusive: Option<String>,
) {
    let transitions = w
        .monitor()
        .transitions_in(&w.ns)
        .iter()
        .map(|t| format!("{}: {}", t.name, t.describe()))
        .collect();
    w.h.record(ScenarioRecord {
        feature: w.feature.clone(),
        scenario: w.scenario.clone(),
        namespace: w.ns.clone(),
        passed: failure.is_none(),
        failure,
        seconds: w.started.elapsed().as_secs_f64(),
        waited: w.waited.as_secs_f64(),
        artifacts,
        transitions,
        text,
        appwrappers: w.monitor().take_history(&w.ns),
        events,
        finished_at: Some(chrono::Utc::now()),
        slowest_stand_probe: crate::latency::slowest_stand_probe(w.started.elapsed()),
        inconclusive,
        ..ScenarioRecord::default()
    });
}

async fn revert(client: &kube::Client, undo: &Undo) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    match undo {
        Undo::NodeLabel { node, key } => {
            nodes
                .patch(
                    node,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"labels": {key: null}}})),
                )
                .await?;
        }
        Undo::NodeTaint { node, key } => clusters::nodes::untaint(client, node, key).await?,
        Undo::PodFinalizers { namespace } => {
            let pods = Api::<Pod>::namespaced(client.clone(), namespace)
                .list(&ListParams::default())
                .await?;
            crate::steps::pods::release(client, namespace, &pods.items).await?;
        }
        Undo::NodeNotReady { node } => {
            // kwok takes the node back and reports it Ready; the node lifecycle controller
            // then lifts its not-ready taints.
            let (key, value) = clusters::nodes::KWOK_NODE_ANNOTATION;
            nodes
                .patch(
                    node,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {key: value}}})),
                )
                .await?;
            let nodes = &nodes;
            crate::wait::eventually(
                Duration::from_secs(60),
                &format!("node {node} to be Ready again"),
                move || async move {
                    let n = nodes.get(node).await?;
                    let ready = clusters::nodes::is_ready(&n)
                        && !clusters::nodes::has_taint(&n, "node.kubernetes.io/not-ready")
                        && !clusters::nodes::has_taint(&n, "node.kubernetes.io/unreachable");
                    Ok(if ready {
                        crate::wait::Check::Done(())
                    } else {
                        crate::wait::Check::NotYet(crate::yaml::render(&objects::to_value(&n.spec)))
                    })
                },
            )
            .await?;
        }
    }
    Ok(())
}

/// Deletes the scenario's AppWrappers and waits (bounded) until they are gone. What is left
/// is reported, then its finalizers are removed so that the namespace can go.
async fn cleanup(w: &mut AwWorld) -> Vec<String> {
    let api = objects::appwrappers(&w.client, &w.ns);
    let mut problems = Vec::new();
    let names: Vec<String> = match api.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .filter_map(|a| a.metadata.name.clone())
            .collect(),
        Err(e) => return vec![format!("cleanup: listing AppWrappers: {e}")],
    };
    for name in &names {
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => problems.push(format!("cleanup: deleting AppWrapper {name}: {e}")),
        }
    }
    w.note(format!("cleanup: deleted {} AppWrapper(s)", names.len()));
    let deadline = tokio::time::Instant::now() + CLEANUP_TIMEOUT;
    let left: Vec<DynamicObject> = loop {
        let left = api
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    for aw in left {
        let value = objects::to_value(&aw);
        let name = aw.metadata.name.clone().unwrap_or_default();
        let pods = objects::pods_of(&w.client, &w.ns, &name)
            .await
            .unwrap_or_default();
        let objects = objects::remaining_objects(&w.client, &w.ns, &value)
            .await
            .unwrap_or_default();
        problems.push(format!(
            "cleanup: AppWrapper {name} was still there {}s after deletion (phase {:?}, finalizers {:?}, {} pod(s), objects {:?}):\n{}",
            CLEANUP_TIMEOUT.as_secs(),
            objects::phase_of(&value),
            aw.metadata.finalizers.clone().unwrap_or_default(),
            pods.len(),
            objects,
            crate::yaml::render_object(&value)
        ));
        let _ = api
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await;
    }
    problems
}

async fn delete_namespace(w: &AwWorld) -> anyhow::Result<()> {
    let cq = Api::<DynamicObject>::all_with(
        w.client.clone(),
        &clusters::kueue::objects::api_resource("ClusterQueue"),
    );
    match cq
        .delete(&w.cluster_queue, &DeleteParams::background())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    // Kueue lets a ResourceFlavor go once no ClusterQueue uses it.
    let flavors = Api::<DynamicObject>::all_with(
        w.client.clone(),
        &clusters::kueue::objects::api_resource("ResourceFlavor"),
    );
    for flavor in &w.flavors {
        match flavors.delete(flavor, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    for (resource, name) in &w.own_cluster_objects {
        match Api::<DynamicObject>::all_with(w.client.clone(), resource)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    match Api::<Namespace>::all(w.client.clone())
        .delete(&w.ns, &DeleteParams::background())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::features::parse_text;
    use crate::monitor::Violation;

    const OWN: Isolation = Isolation::OwnController;
    const CLUSTER: Isolation = Isolation::OwnCluster;
    const ALONE: Isolation = Isolation::Alone;

    #[rstest::rstest]
    #[case::own_controller((OWN, ALONE), "@serial @own-controller", false, OWN)]
    #[case::own_cluster((CLUSTER, ALONE), "@serial @own-controller", false, CLUSTER)]
    #[case::nothing_offered((ALONE, ALONE), "@serial @own-controller", true, ALONE)]
    #[case::kueue_upgrade_alone((CLUSTER, ALONE), "@serial @kueue-upgrade", true, ALONE)]
    #[case::kueue_upgrade_own_cluster((OWN, CLUSTER), "@serial @kueue-upgrade", false, CLUSTER)]
    #[case::plain((OWN, CLUSTER), "@kueue", false, ALONE)]
    #[case::own_without_serial((OWN, ALONE), "@own-controller", false, OWN)]
    fn a_scenario_that_stops_the_controller_runs_alone_unless_it_gets_its_own(
        #[case] (own_controller, kueue_upgrade): (Isolation, Isolation),
        #[case] tags: &str,
        #[case] serial: bool,
        #[case] gets: Isolation,
    ) {
        let text = format!("{tags}\nFeature: F\n  Scenario: S\n    Given a step\n");
        let feature = parse_text(Path::new("f.feature"), &text).unwrap();
        let scenario = &feature.scenarios[0];
        let offers = Offers {
            own_controller,
            kueue_upgrade,
        };
        assert_eq!(is_serial(offers, &feature, None, scenario), serial);
        assert_eq!(isolation(offers, &feature, None, scenario), gets);
    }

    fn violation(message: &str) -> Violation {
        Violation {
            namespace: "ns".into(),
            name: "a".into(),
            message: message.into(),
            before: None,
            after: String::new(),
            at: chrono::Utc::now(),
        }
    }

    #[test]
    fn only_a_failure_that_could_not_judge_is_inconclusive() {
        let unchecked = || violation(crate::monitor::findings::OUT_OF_ORDER);
        let broken = || violation("phase Succeeded: QuotaReserved must be False");
        let why = || Some("began late".to_string());
        let problem = || vec!["a leftover pod".to_string()];
        /// A finished scenario: whether a step failed, whether it could not judge, its other
        /// problems and its violations; and whether that is inconclusive.
        struct Row(bool, Option<String>, Vec<String>, Vec<Violation>, bool);
        let table = [
            Row(true, why(), vec![], vec![], true),
            Row(true, why(), vec![], vec![unchecked()], true),
            Row(true, None, vec![], vec![], false),
            Row(true, why(), problem(), vec![], false),
            Row(true, why(), vec![], vec![broken()], false),
            Row(false, None, vec![], vec![unchecked()], true),
            Row(false, None, vec![], vec![unchecked(), broken()], false),
            Row(false, None, vec![], vec![], false),
        ];
        for (row, Row(failed, undecided, problems, violations, expected)) in
            table.into_iter().enumerate()
        {
            assert_eq!(
                inconclusive(failed, undecided, &problems, &violations).is_some(),
                expected,
                "row {row}"
            );
        }
    }
}
