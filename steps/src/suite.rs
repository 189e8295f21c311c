//! One run of the suite: the cluster with Kueue, the controller under test, the invariant
//! monitor, cucumber over the feature files, and the reports.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use cucumber::runner::basic::ScenarioType;
use cucumber::{World as _, WriterExt as _, writer};
use futures::FutureExt as _;

use crate::environment::{Environment, EnvironmentFailed};
use crate::hooks;
use crate::monitor::Monitor;
use crate::options::{
    CONTROLLER_UPGRADE_TAG, ControllerMode, ControllerUpgrade, KUEUE_UPGRADE_TAG, KueueUpgrade,
    SuiteOptions,
};
use crate::plan::{Plan, Prepared, plural};
use crate::report::Summary;
use crate::report::gherkin::{ScenarioKey, ScenarioText};
use crate::report::{self, Report, Skipped, Status};
use crate::run_context::{self, KueueHandle, PendingUpgrade, RunContext};
use crate::serial_offers::{Isolation, Offers};
use crate::version_tags::{self, StandVersions};
use crate::world::AwWorld;
use clusters::Capabilities;

/// Runs the features of `options.features` and writes the reports. The features are parsed
/// and checked first: a bad feature file fails here, before anything starts. Returns the
/// summary; the caller prints [`Summary::closing_line`] and fails when [`Summary::success`]
/// is false.
pub async fn run_suite(options: SuiteOptions) -> anyhow::Result<Summary> {
    let plan = Plan::prepare(&options)?;
    run_plan(options, plan).await
}

/// Runs a plan [`Plan::prepare`] made from the same `options`.
pub async fn run_plan(options: SuiteOptions, plan: Plan) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let upgrade = options.kueue_upgrade().map_err(anyhow::Error::msg)?;
    let kueue_from = match &upgrade {
        KueueUpgrade::From { from, .. } if plan.selects_tagged(KUEUE_UPGRADE_TAG) => Some(*from),
        _ => None,
    };
    let (offers, why) = Offers::of(&options);
    for why in why {
        println!("awconf: {why}");
    }
    // The run's Kueue starts at the release the upgrade starts from only when the upgrade
    // scenario runs on the run's cluster.
    let (run_kueue_from, own_kueue_from) = match offers.kueue_upgrade {
        Isolation::OwnCluster => (None, kueue_from),
        _ => (kueue_from, None),
    };
    std::fs::create_dir_all(&options.report_dir)
        .with_context(|| format!("creating {}", options.report_dir.display()))?;
    if let Some(from) = kueue_from {
        let via: Vec<String> = match &options.kueue {
            clusters::kueue::KueueSource::Release(to) => from
                .pinned_between(*to)
                .iter()
                .map(|v| format!("{v}, then "))
                .collect(),
            _ => Vec::new(),
        };
        let place = match offers.kueue_upgrade {
            Isolation::OwnCluster => "on a cluster of its own, beside the other scenarios",
            _ => "on the run's cluster, before any other scenario",
        };
        println!(
            "awconf: the upgrade scenario runs Kueue {from}, then upgrades it to {}{} ({place})",
            via.concat(),
            options.kueue.label()
        );
    }
    let controller_upgrade = options.controller_upgrade();
    let controller_from = match &controller_upgrade {
        ControllerUpgrade::From(from) if plan.selects_tagged(CONTROLLER_UPGRADE_TAG) => {
            println!(
                "awconf: the controller upgrade scenario runs {}, then the controller under \
                 test in its place",
                from.describe()
            );
            Some(from.clone())
        }
        _ => None,
    };
    crate::environment::prebuild::build(crate::environment::prebuild::needed(
        &options,
        kueue_from,
        controller_from.as_ref(),
    ))
    .await
    .map_err(EnvironmentFailed::from)?;

    let environment = Environment::up(&options, run_kueue_from)
        .await
        .map_err(EnvironmentFailed::from)?;
    let monitor = Monitor::start(
        environment.watch_client.clone(),
        options.monitor_source(environment.audit_log.clone(), environment.etcd.clone()),
        Duration::from_secs(60),
    )
    .await
    .map_err(EnvironmentFailed::from)?;
    println!("awconf: the invariant monitor reads {}", monitor.source());
    let (slack, slowest) = crate::latency::probes::calibrate(&environment.client)
        .await
        .map_err(EnvironmentFailed::from)?;
    let probing = crate::latency::probes::keep_probing(environment.client.clone());
    let probing_controller =
        crate::latency::probes::keep_probing_controller(environment.client.clone());
    println!(
        "awconf: the slowest stand probe took {} ms; timing windows allow {}s more on their \
         late side, more if the stand gets slower during the run",
        slowest.as_millis(),
        slack.as_secs()
    );
    println!(
        "awconf: cluster ready after {:.0}s; controller under test: {}",
        started.elapsed().as_secs_f64(),
        options.controller.name()
    );
    let ready_at = chrono::Utc::now();

    let Environment {
        kubeconfig,
        client,
        watch_client,
        kueue_log,
        audit_log: _,
        etcd: _,
        controller,
        restore,
        capabilities,
        kueue,
        keep,
    } = environment;
    let pending = match (run_kueue_from, kueue) {
        (Some(from), Some(kueue)) => Some(PendingUpgrade::new(
            from,
            options.kueue.clone(),
            KueueHandle::Run(kueue),
        )),
        _ => None,
    };
    let kubernetes = match client.apiserver_version().await {
        Ok(info) => Some(info.git_version),
        Err(e) => {
            tracing::warn!("reading the API server's version: {e}");
            None
        }
    };
    let context = Arc::new(
        RunContext::new(
            options.clone(),
            client,
            watch_client,
            kubeconfig,
            kueue_log,
            controller,
            monitor,
            capabilities,
            crate::logging::current(),
            offers,
        )
        .with_kueue_upgrade(pending)
        .with_kueue_upgrade_on_own_cluster(own_kueue_from)
        .with_kubernetes(kubernetes)
        .with_progress(plan.selected().len()),
    );
    run_context::install(Arc::clone(&context));
    let not_selected = plan.not_selected();
    let upgrades = Upgrades {
        kueue: upgrade,
        controller: controller_upgrade,
    };
    let ahead = match &context.own_controller_pods {
        Some(pods) => {
            let dir = context.options.report_dir.join("controllers");
            let count = plan.tagged(crate::hooks::OWN_CONTROLLER_TAG);
            pods.make_ahead(count, &context.controller, &dir).await
        }
        None => Vec::new(),
    };
    let warm_up = async {
        if let Some(pods) = &context.own_controller_pods {
            pods.warm_up(ahead, &context.watch_client).await;
        }
    };
    let (first, ()) = tokio::join!(run_features(&context, &plan, &upgrades, None), warm_up);
    let (run, rerun_because) = run_inconclusive_again(&context, &plan, &upgrades, first).await;
    let scenarios_done = chrono::Utc::now();
    if let Some(progress) = &context.progress {
        progress.finish();
    }
    run_context::uninstall();
    probing_controller.abort();
    crate::latency::probes::remove_controller_probes(&context.client).await;
    if let Some(pods) = &context.own_controller_pods {
        pods.remove_all().await;
    }
    Environment::down(&context.controller, restore, &context.watch_client).await;
    context.monitor.stop();
    probing.abort();
    drop(keep);
    run?;
    let moments = report::time_spent::Moments {
        started: started_at,
        ready: ready_at,
        scenarios_done,
        ended: chrono::Utc::now(),
    };
    summarize(
        &context,
        started.elapsed(),
        moments,
        not_selected,
        &rerun_because,
    )
}

/// Runs the scenarios whose last attempt failed in a way that says nothing of the controller
/// again, up to `--starved-reruns` rounds, after `first` (the run of every scenario). Returns
/// the last round's result and why each scenario ran again.
async fn run_inconclusive_again(
    context: &RunContext,
    plan: &Plan,
    upgrades: &Upgrades,
    first: anyhow::Result<()>,
) -> (anyhow::Result<()>, BTreeMap<ScenarioKey, String>) {
    let mut run = first;
    let mut rerun_because = BTreeMap::new();
    for round in 1..=context.options.starved_reruns {
        if run.is_err() {
            break;
        }
        let again = crate::reruns::inconclusive_failures(
            &report::attempts::merge(context.records()),
            |record| may_run_twice(context.isolation, &record.text.tags),
        );
        if again.is_empty() {
            break;
        }
        println!(
            "awconf: {} scenario{} failed in a way that says nothing of the controller (the \
             machine starved of CPU, states the monitor could not check, or a step that could \
             not tell); running {} again",
            again.len(),
            plural(again.len()),
            if again.len() == 1 { "it" } else { "them" },
        );
        if let Some(progress) = &context.progress {
            progress.add_to_total(again.len());
        }
        let keys = again.keys().cloned().collect();
        rerun_because.extend(again);
        run = run_features(context, plan, upgrades, Some(Rerun { round, keys })).await;
    }
    (run, rerun_because)
}

/// Whether a scenario can run a second time in a run: the `@kueue-upgrade` scenario upgrades
/// the run's own Kueue unless it has a cluster of its own.
fn may_run_twice(isolation: Offers, tags: &[String]) -> bool {
    isolation.kueue_upgrade == Isolation::OwnCluster || !tags.iter().any(|t| t == KUEUE_UPGRADE_TAG)
}

/// A second pass over the scenarios whose failure said nothing of the controller
/// ([`crate::reruns`]).
struct Rerun {
    round: usize,
    keys: BTreeSet<ScenarioKey>,
}

/// Runs cucumber over the plan's features; with `rerun`, over those scenarios only.
async fn run_features(
    h: &RunContext,
    plan: &Plan,
    upgrades: &Upgrades,
    rerun: Option<Rerun>,
) -> anyhow::Result<()> {
    let o = &h.options;
    let json_path = o.report_dir.join(match &rerun {
        None => "cucumber.json".to_string(),
        Some(again) => format!("cucumber-rerun-{}.json", again.round),
    });
    let json = std::fs::File::create(&json_path)
        .with_context(|| format!("creating {}", json_path.display()))?;
    let mode = o.controller.clone();
    let offers = h.isolation;
    let capabilities = h.capabilities;
    let (features, selection) = (plan.features.clone(), plan.selection.clone());
    let only = rerun.map(|again| again.keys);
    let upgrades = upgrades.clone();
    let excluded = Arc::clone(&h.excluded);
    let versions = StandVersions::of(
        o.kueue.release_version().map(|v| v.to_string()).as_deref(),
        h.kubernetes.as_deref(),
    );
    // The input type is the file parser's; `with_parser` replaces that parser.
    AwWorld::cucumber::<std::path::PathBuf>()
        .with_parser(Prepared {
            upgrade_alone: offers.kueue_upgrade == Isolation::Alone,
            expected: h.expected.clone(),
        })
        // The run's slots (`RunContext::run_slots`) hold scenarios to `--concurrency`.
        .max_concurrent_scenarios(None)
        .which_scenario(move |feature, rule, scenario| {
            if hooks::is_serial(offers, feature, rule, scenario) {
                ScenarioType::Serial
            } else {
                ScenarioType::Concurrent
            }
        })
        .retries((o.retries > 0).then_some(o.retries))
        .before(|feature, rule, scenario, world| {
            hooks::before(feature, rule, scenario, world).boxed_local()
        })
        .after(|feature, rule, scenario, finished, world| {
            hooks::after(feature, rule, scenario, finished, world).boxed_local()
        })
        .with_writer(
            writer::Basic::stdout()
                .summarized()
                .tee::<AwWorld, _>(writer::Json::for_tee(json))
                .tee::<AwWorld, _>(
                    h.steps
                        .clone()
                        .discard_stats_writes()
                        .discard_arbitrary_writes(),
                )
                .normalized(),
        )
        .fail_on_skipped()
        .with_default_cli()
        .filter_run(features, move |feature, rule, scenario| {
            if !selection.selects(feature, rule, scenario) {
                return false;
            }
            if let Some(only) = &only {
                return only.contains(&ScenarioKey::of(feature, scenario));
            }
            let tags = feature
                .tags
                .iter()
                .chain(rule.iter().flat_map(|r| r.tags.iter()))
                .chain(scenario.tags.iter());
            match exclusion(&mode, &capabilities, &upgrades, &versions, tags) {
                Some(reason) => {
                    if let Ok(mut list) = excluded.lock() {
                        list.push(Skipped {
                            feature: feature.name.clone(),
                            scenario: scenario.name.clone(),
                            reason,
                            text: ScenarioText::of(feature, rule, scenario),
                        });
                    }
                    false
                }
                None => true,
            }
        })
        .await;
    Ok(())
}

/// What a run does about the scenarios that upgrade Kueue and the controller.
#[derive(Clone)]
pub struct Upgrades {
    pub kueue: KueueUpgrade,
    pub controller: ControllerUpgrade,
}

/// Why a scenario does not run here, if it does not: `@extension` scenarios specify where our
/// controller deliberately goes beyond the reference operator; `@serial` ones stop and kill
/// the controller; `@gpu` ones need nodes that advertise `nvidia.com/gpu`; `@kueue-upgrade`
/// ones need a Kueue the run can upgrade in place, `@controller-upgrade` ones a controller to
/// upgrade from; version tags (`@kueue>=0.18`) need those versions.
pub fn exclusion<'a>(
    mode: &ControllerMode,
    capabilities: &Capabilities,
    upgrades: &Upgrades,
    versions: &StandVersions,
    tags: impl Iterator<Item = &'a String>,
) -> Option<String> {
    let tags: Vec<&String> = tags.collect();
    if let Some(reason) = version_tags::unmet(tags.iter().copied(), versions) {
        return Some(reason);
    }
    let has = |tag: &str| tags.iter().any(|t| *t == tag);
    if has("extension") && matches!(mode, ControllerMode::Reference { .. }) {
        return Some(
            "@extension: a deliberate difference of ours from the reference operator".into(),
        );
    }
    if has("serial") && !capabilities.restartable_control_plane {
        return Some("@serial: needs a controller the harness can stop and restart".into());
    }
    if has(KUEUE_UPGRADE_TAG)
        && let KueueUpgrade::Impossible(reason) = &upgrades.kueue
    {
        return Some(reason.clone());
    }
    if has(CONTROLLER_UPGRADE_TAG)
        && let ControllerUpgrade::Impossible(reason) = &upgrades.controller
    {
        return Some(reason.clone());
    }
    if has("gpu") && !capabilities.fake_gpu_nodes {
        return Some(
            "@gpu: needs nodes that advertise nvidia.com/gpu (KWOK's fake nodes do: --install kwok)"
                .into(),
        );
    }
    None
}

fn summarize(
    h: &RunContext,
    duration: Duration,
    moments: report::time_spent::Moments,
    not_selected: usize,
    rerun_because: &BTreeMap<ScenarioKey, String>,
) -> anyhow::Result<Summary> {
    let mut runs = h.steps.take();
    let mut records = report::attempts::merge(h.records());
    for record in &mut records {
        record.run = runs.remove(&record.text.key).unwrap_or_default();
        if let (Some(why), Some(before)) = (
            rerun_because.get(&record.text.key),
            record.earlier.last_mut(),
        ) {
            before.rerun_because = Some(why.clone());
        }
    }
    let skipped = h.excluded.lock().map(|l| l.clone()).unwrap_or_default();
    let coverage = h.monitor.coverage();
    let count = |status| records.iter().filter(|r| r.status() == status).count();
    let diagram: Vec<_> = coverage.iter().filter(|e| e.in_diagram).collect();
    let mut slowest: Vec<(String, f64)> = records.iter().map(|r| (r.title(), r.seconds)).collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(5);
    let summary = Summary {
        passed: count(Status::Passed),
        failed: count(Status::Failed),
        flaky: count(Status::Flaky),
        retries: h.options.retries,
        not_selected,
        duration,
        transitions_covered: diagram.iter().filter(|e| e.direct > 0).count(),
        transitions_total: diagram.len(),
        monitor: format!(
            "read {}; {} changes went unchecked; {}",
            h.monitor.source(),
            h.monitor.unchecked_count(),
            h.monitor.release_checks()
        ),
        slowest,
        time_spent: report::time_spent::of(moments, &records).lines(),
        excluded: skipped
            .iter()
            .map(|s| (s.title(), s.reason.clone()))
            .collect(),
        failed_scenarios: records
            .iter()
            .filter(|r| !r.passed)
            .map(|r| r.title())
            .collect(),
        flaky_scenarios: records
            .iter()
            .filter(|r| r.flaky)
            .map(|r| (r.title(), r.earlier.len() + 1))
            .collect(),
        report_dir: h.options.report_dir.clone(),
    };
    let junit_path = h.options.junit_path();
    if let Some(dir) = junit_path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(
        &junit_path,
        report::junit::render(&records, &skipped, duration.as_secs_f64()),
    )
    .with_context(|| format!("writing {}", junit_path.display()))?;
    let context = format!(
        "controller under test: {}; Kueue {}; Kubernetes {}; {} scenarios at most at once; \
         timing windows allow {}s more on their late side (measured at the start; up to {}s while \
         the stand or the controller was slower; its slowest reaction took {} ms){}{}",
        h.options.controller.name(),
        h.options.kueue.label(),
        h.kubernetes.as_deref().unwrap_or("(version unknown)"),
        h.options.concurrency,
        crate::latency::slack().as_secs(),
        crate::latency::peak_slack().as_secs(),
        crate::latency::slowest_reaction().as_millis(),
        match h.options.retries {
            0 => String::new(),
            1 => "; a failed scenario retried once".into(),
            n => format!("; a failed scenario retried up to {n} times"),
        },
        match rerun_because.len() {
            0 => String::new(),
            n => format!(
                "; {n} scenario{} whose failure said nothing of the controller ran again",
                plural(n)
            ),
        }
    );
    let rendering = Instant::now();
    let index = report::write(
        &h.options.report_dir,
        &Report {
            summary: &summary,
            records: &records,
            skipped: &skipped,
            coverage: &coverage,
            context: &context,
        },
    )?;
    tracing::info!(
        "report {} written in {} ms",
        index.display(),
        rendering.elapsed().as_millis()
    );
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why a scenario with `tags` is left out of a run of `mode` whose versions are unknown.
    fn skip<'a>(
        mode: &ControllerMode,
        capabilities: &Capabilities,
        upgrades: &Upgrades,
        tags: impl Iterator<Item = &'a String>,
    ) -> Option<String> {
        exclusion(
            mode,
            capabilities,
            upgrades,
            &StandVersions::default(),
            tags,
        )
    }

    #[test]
    fn the_kueue_upgrade_runs_twice_only_on_a_cluster_of_its_own() {
        let offers = |kueue_upgrade| Offers {
            own_controller: Isolation::Alone,
            kueue_upgrade,
        };
        let upgrade = [KUEUE_UPGRADE_TAG.to_string()];
        let other = ["serial".to_string()];
        // (where the upgrade runs, the scenario's tags) → may run twice
        let table: [(Isolation, &[String], bool); 4] = [
            (Isolation::OwnCluster, &upgrade, true),
            (Isolation::Alone, &upgrade, false),
            (Isolation::Alone, &other, true),
            (Isolation::Alone, &[], true),
        ];
        for (isolation, tags, expected) in table {
            assert_eq!(
                may_run_twice(offers(isolation), tags),
                expected,
                "{isolation:?} {tags:?}"
            );
        }
    }

    #[test]
    fn only_the_reference_skips_extension_scenarios() {
        let tags = ["serial".to_string(), "extension".to_string()];
        let reference = ControllerMode::Reference {
            version: "v1.2.2".into(),
        };
        let all = Capabilities {
            simulated_pod_outcomes: true,
            fake_gpu_nodes: true,
            restartable_control_plane: true,
        };
        let up = upgrade();
        assert!(skip(&reference, &all, &up, tags.iter()).is_some());
        assert!(skip(&ControllerMode::Embedded, &all, &up, tags.iter()).is_none());
        assert!(skip(&reference, &all, &up, tags[..1].iter()).is_none());
    }

    #[test]
    fn scenarios_whose_needs_are_missing_are_skipped_with_the_reason() {
        let tag = |t: &str| vec![t.to_string()];
        let none = Capabilities::default();
        let cases = [("serial", "stop and restart"), ("gpu", "nvidia.com/gpu")];
        let up = upgrade();
        for (t, why) in cases {
            let reason = skip(&ControllerMode::Embedded, &none, &up, tag(t).iter()).unwrap();
            assert!(reason.contains(why), "{t}: {reason}");
        }
        assert!(skip(&ControllerMode::Embedded, &none, &up, tag("kueue").iter()).is_none());
    }

    fn upgrade() -> Upgrades {
        Upgrades {
            kueue: KueueUpgrade::From {
                from: clusters::kueue::KueueVersion(0, 18, 4),
                to: clusters::kueue::KueueVersion(0, 19, 2),
            },
            controller: ControllerUpgrade::From(ControllerMode::Reference {
                version: "v1.2.2".into(),
            }),
        }
    }

    #[test]
    fn the_upgrade_scenario_is_skipped_where_no_upgrade_can_happen() {
        let all = Capabilities {
            simulated_pod_outcomes: true,
            fake_gpu_nodes: true,
            restartable_control_plane: true,
        };
        let tags = ["serial".to_string(), KUEUE_UPGRADE_TAG.to_string()];
        let embedded = ControllerMode::Embedded;
        assert_eq!(skip(&embedded, &all, &upgrade(), tags.iter()), None);
        let why = Upgrades {
            kueue: KueueUpgrade::Impossible(
                "@kueue-upgrade: Kueue runs inside the kind cluster".into(),
            ),
            ..upgrade()
        };
        assert_eq!(
            skip(&embedded, &all, &why, tags.iter()).as_deref(),
            Some("@kueue-upgrade: Kueue runs inside the kind cluster")
        );
        assert_eq!(skip(&embedded, &all, &why, tags[..1].iter()), None);
    }

    #[test]
    fn the_controller_upgrade_scenario_is_skipped_without_a_controller_to_start_from() {
        let all = Capabilities {
            simulated_pod_outcomes: true,
            fake_gpu_nodes: true,
            restartable_control_plane: true,
        };
        let tags = ["serial".to_string(), CONTROLLER_UPGRADE_TAG.to_string()];
        let embedded = ControllerMode::Embedded;
        assert_eq!(skip(&embedded, &all, &upgrade(), tags.iter()), None);
        let reason = "@controller-upgrade: no controller to upgrade from was named";
        let none = Upgrades {
            controller: ControllerUpgrade::Impossible(reason.into()),
            ..upgrade()
        };
        assert_eq!(
            skip(&embedded, &all, &none, tags.iter()).as_deref(),
            Some(reason)
        );
        assert_eq!(skip(&embedded, &all, &none, tags[..1].iter()), None);
    }
}
