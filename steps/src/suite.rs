//! One run of the suite: the cluster with Kueue, the controller under test, the invariant
//! monitor, cucumber over the feature files, and the reports.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clusters::Cluster as _;
use clusters::kueue::objects;
use cucumber::tag::Ext as _;
use cucumber::writer::Stats as _;
use cucumber::{World as _, WriterExt as _, writer};
use futures::FutureExt as _;
use serde_json::json;

use appwrapper_controller::webhook::WebhookServer;

use crate::controller::{ControllerUnderTest, suite_config};
use crate::harness::{self, FLAVOR, FLAVOR_TOLERATION_KEY, Harness};
use crate::hooks;
use crate::monitor::Monitor;
use crate::options::{ClusterChoice, ControllerMode, SuiteOptions, Summary};
use crate::reference;
use crate::webhook::WebhookEndpoint;
use crate::world::AwWorld;

/// Runs the features of `options.features` and writes the reports. Returns the summary; the
/// caller prints [`Summary::closing_line`] and fails when [`Summary::success`] is false.
pub async fn run_suite(options: SuiteOptions) -> anyhow::Result<Summary> {
    let started = Instant::now();
    std::fs::create_dir_all(&options.report_dir)
        .with_context(|| format!("creating {}", options.report_dir.display()))?;
    let ClusterChoice::Local = options.cluster;
    let tags = match &options.tags {
        Some(expr) => Some(
            expr.parse::<cucumber::gherkin::tagexpr::TagOperation>()
                .map_err(|e| anyhow::anyhow!("tag expression {expr:?}: {e}"))?,
        ),
        None => None,
    };

    let version = options.kueue_version.clone();
    println!("awconf: bringing up the embedded cluster with Kueue {version} (built on first use)");
    let (cluster, kueue) = tokio::task::spawn_blocking(move || clusters::kueue::shared(&version))
        .await
        .context("the cluster start-up task failed")?
        .map_err(anyhow::Error::msg)?;
    let watch_client = cluster.client().await?;
    let client = steps_client(cluster.kubeconfig()).await?;
    apply_flavor(&client).await?;

    let (controller, webhook_server) =
        controller_with_webhooks(&options, cluster, &client, &watch_client).await?;
    let monitor = Monitor::start(watch_client.clone(), Duration::from_secs(60)).await?;
    println!(
        "awconf: cluster ready after {:.0}s; controller under test: {}",
        started.elapsed().as_secs_f64(),
        options.controller.name()
    );

    let harness = Arc::new(Harness::new(
        options.clone(),
        client,
        watch_client,
        cluster,
        kueue,
        controller,
        monitor,
        crate::logging::current(),
    ));
    harness::install(Arc::clone(&harness));
    let run = run_features(&harness, tags).await;
    harness::uninstall();
    if let Err(e) = harness.controller.lock().await.stop().await {
        tracing::warn!("stopping the controller: {e:#}");
    }
    harness.monitor.stop();
    if let Some(server) = webhook_server {
        server.stop().await;
    }
    let parse_errors = run?;
    summarize(&harness, parse_errors, started.elapsed())
}

/// Starts the controller under test and registers its webhooks beside Kueue's: served here
/// for the embedded controller (the server is returned), by the child in the process mode, by
/// the reference operator through its Service. An external controller brings its own.
async fn controller_with_webhooks(
    options: &SuiteOptions,
    cluster: &'static clusters::LocalCluster,
    client: &kube::Client,
    watch_client: &kube::Client,
) -> anyhow::Result<(ControllerUnderTest, Option<WebhookServer>)> {
    let mut config = suite_config();
    config.webhooks_enabled = options.controller.is_child();
    let mut controller = ControllerUnderTest::new(
        options.controller.clone(),
        config.clone(),
        cluster.kubeconfig(),
        &options.report_dir,
    )?;
    // A child controller serves the webhooks itself, so they are down while it is: there
    // they fail open, or `@serial` scenarios could not create AppWrappers meanwhile (no
    // other scenario runs then). The embedded server outlives the controller: fail closed.
    let fail_open = options.controller.is_child();
    match &options.controller {
        ControllerMode::External { .. } => {
            controller.start(watch_client).await?;
            Ok((controller, None))
        }
        ControllerMode::Reference { version } => {
            let version = version.clone();
            println!("awconf: the reference operator {version} (built on first use)");
            tokio::task::spawn_blocking(move || reference::build(&version))
                .await
                .context("the reference build task failed")??;
            let cert_dir = std::path::PathBuf::from(reference::CERT_DIR);
            reference::install(client, &config, &cert_dir, fail_open).await?;
            let mount = reference::mount_certificates(client.clone(), cert_dir);
            controller = controller.with_certificate_mount(mount);
            start_reference(&mut controller, client, watch_client).await?;
            Ok((controller, None))
        }
        ControllerMode::Embedded | ControllerMode::Process { .. } => {
            let endpoint = WebhookEndpoint::prepare(cluster, &options.report_dir)?;
            let mut server = None;
            if let ControllerMode::Embedded = options.controller {
                server = Some(endpoint.serve(&config, client.clone()).await?);
            }
            controller = controller.with_webhook(endpoint.clone());
            controller.start(watch_client).await?;
            endpoint.register(client, fail_open).await?;
            Ok((controller, server))
        }
    }
}

/// Starts the reference operator and waits until its webhooks answer. Its first start exits
/// when its certificate Secret was still empty (in a cluster the pod restarts until the
/// kubelet has mounted the filled Secret): restart it as its Deployment would.
async fn start_reference(
    controller: &mut ControllerUnderTest,
    client: &kube::Client,
    watch_client: &kube::Client,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last = String::new();
    while Instant::now() < deadline {
        if !controller.is_running() {
            if controller.starts() > 0 {
                tracing::info!("the reference operator exited while starting; restarting it");
            }
            controller.start(watch_client).await?;
        }
        match crate::webhook::effective(client).await? {
            Ok(()) => return Ok(()),
            Err(why) => last = why,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    anyhow::bail!(
        "the reference operator's webhooks did not take effect within 120 s (last: {last}); see its log {}",
        controller
            .log_path()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    )
}

/// A client whose requests time out, so that a hung API call fails its step instead of
/// hanging the run (cucumber has no step timeout).
async fn steps_client(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    config.write_timeout = Some(Duration::from_secs(30));
    Ok(kube::Client::try_from(config)?)
}

/// The ResourceFlavor of every scenario's ClusterQueue: fake nodes, plus a toleration that
/// admission injects into the pods.
async fn apply_flavor(client: &kube::Client) -> anyhow::Result<()> {
    let mut flavor = objects::resource_flavor(FLAVOR);
    flavor["spec"] = json!({
        "nodeLabels": { "type": "kwok" },
        "tolerations": [{ "key": FLAVOR_TOLERATION_KEY, "operator": "Exists", "effect": "NoSchedule" }],
    });
    objects::apply(client, &flavor)
        .await
        .context("creating the ResourceFlavor")?;
    Ok(())
}

/// Runs cucumber; returns the number of feature files that did not parse.
async fn run_features(
    h: &Harness,
    tags: Option<cucumber::gherkin::tagexpr::TagOperation>,
) -> anyhow::Result<usize> {
    let o = &h.options;
    let junit_path = o.junit_path();
    if let Some(dir) = junit_path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let junit = std::fs::File::create(&junit_path)
        .with_context(|| format!("creating {}", junit_path.display()))?;
    let json_path = o.report_dir.join("cucumber.json");
    let json = std::fs::File::create(&json_path)
        .with_context(|| format!("creating {}", json_path.display()))?;
    let features = match &o.features {
        Some(dir) => dir.clone(),
        None => crate::features::write_built_in(&o.report_dir.join("features"))
            .context("writing out the built-in features")?,
    };
    let mode = o.controller.clone();
    let selection = o.clone();
    let excluded = Arc::clone(&h.excluded);
    let writer = AwWorld::cucumber()
        .max_concurrent_scenarios(o.concurrency.max(1))
        .before(|feature, rule, scenario, world| {
            hooks::before(feature, rule, scenario, world).boxed_local()
        })
        .after(|feature, _rule, scenario, finished, world| {
            hooks::after(feature, scenario, finished, world).boxed_local()
        })
        .with_writer(
            writer::Basic::stdout()
                .summarized()
                .tee::<AwWorld, _>(writer::JUnit::for_tee(junit, 0))
                .tee::<AwWorld, _>(writer::Json::for_tee(json))
                .normalized(),
        )
        .fail_on_skipped()
        .with_default_cli()
        .filter_run(features, move |feature, rule, scenario| {
            let tags_of = || {
                feature
                    .tags
                    .iter()
                    .chain(rule.iter().flat_map(|r| r.tags.iter()))
                    .chain(scenario.tags.iter())
            };
            if !tags.as_ref().is_none_or(|op| op.eval(tags_of()))
                || !selection.selects(&feature.name, &scenario.name)
            {
                return false;
            }
            match exclusion(&mode, tags_of()) {
                Some(reason) => {
                    let title = format!("{}: {}", feature.name, scenario.name);
                    if let Ok(mut list) = excluded.lock() {
                        list.push((title, reason));
                    }
                    false
                }
                None => true,
            }
        })
        .await;
    Ok(writer.parsing_errors())
}

/// Why the controller under test is not held to a scenario, if it is not: `@extension`
/// scenarios specify where our controller deliberately goes beyond the reference operator.
pub fn exclusion<'a>(
    mode: &ControllerMode,
    mut tags: impl Iterator<Item = &'a String>,
) -> Option<String> {
    let extension = tags.any(|t| t == "extension");
    (extension && matches!(mode, ControllerMode::Reference { .. })).then(|| {
        "@extension: a deliberate difference of ours from the reference operator".to_string()
    })
}

fn summarize(h: &Harness, parse_errors: usize, duration: Duration) -> anyhow::Result<Summary> {
    let records = h.records();
    let coverage = h.monitor.coverage();
    let passed = records.iter().filter(|r| r.passed).count();
    let failed = records.len() - passed + parse_errors;
    let diagram: Vec<_> = coverage.iter().filter(|e| e.in_diagram).collect();
    let mut slowest: Vec<(String, f64)> = records.iter().map(|r| (r.title(), r.seconds)).collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(5);
    let summary = Summary {
        passed,
        failed,
        parse_errors,
        duration,
        transitions_covered: diagram.iter().filter(|e| e.direct > 0).count(),
        transitions_total: diagram.len(),
        slowest,
        excluded: h.excluded.lock().map(|l| l.clone()).unwrap_or_default(),
        failed_scenarios: records
            .iter()
            .filter(|r| !r.passed)
            .map(|r| r.title())
            .collect(),
        report_dir: h.options.report_dir.clone(),
    };
    let context = format!(
        "controller under test: {}; Kueue {}; {} scenarios at most at once",
        h.options.controller.name(),
        h.options.kueue_version,
        h.options.concurrency
    );
    crate::report::write_html(
        &h.options.report_dir,
        &summary,
        &records,
        &coverage,
        &context,
    )?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_reference_skips_extension_scenarios() {
        let tags = ["serial".to_string(), "extension".to_string()];
        let reference = ControllerMode::Reference {
            version: "v1.2.2".into(),
        };
        assert!(exclusion(&reference, tags.iter()).is_some());
        assert!(exclusion(&ControllerMode::Embedded, tags.iter()).is_none());
        assert!(exclusion(&reference, tags[..1].iter()).is_none());
    }
}
