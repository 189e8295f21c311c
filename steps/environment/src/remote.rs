//! Any cluster but the local one: Kueue, KWOK and the controller run inside it, installed
//! by the run (`--install`, and always for a cluster the run creates) or already there.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clusters::Cluster as _;
use clusters::images::Loader;
use clusters::install::controller::manifests as controller_manifests;
use clusters::install::logs::PodLogs;
use clusters::install::scale::Workload;
use clusters::install::{self, Part, Target};
use clusters::nodes::NodeShape;
use clusters::{Capabilities, ExistingCluster};

use crate::client::steps_client;
use crate::environment::Environment;
use crate::installed;
use crate::operator_config::{Placement, operator_config};
use crate::options::{ClusterChoice, ControllerMode, SuiteOptions};
use crate::under_test::{ControllerUnderTest, find_binary, shared_selector, suite_config};

/// A connected or created cluster: its kubeconfig, how images reach it, and what the run
/// must install into it.
struct Reached {
    kubeconfig: PathBuf,
    loader: Option<Loader>,
    install: Vec<Part>,
    keep: Box<dyn std::any::Any + Send + Sync>,
}

pub async fn up(options: &SuiteOptions) -> anyhow::Result<Environment> {
    let (image, namespace) = match &options.controller {
        ControllerMode::InCluster { image } => (image.clone(), controller_manifests::NAMESPACE),
        ControllerMode::Installed { namespace } => (None, namespace.as_str()),
        other => anyhow::bail!(
            "--controller {} runs on this machine beside the local cluster; on another cluster \
             use --controller in-cluster or installed",
            other.name()
        ),
    };
    let installed = matches!(options.controller, ControllerMode::Installed { .. });
    let reached = reach(&options.cluster).await?;
    let mut parts = reached.install.clone();
    if installed {
        parts.retain(|p| *p != Part::Controller);
    } else if !parts.contains(&Part::Controller) {
        parts.push(Part::Controller);
    }
    let client = clusters::cluster::client_from_kubeconfig(&reached.kubeconfig).await?;
    let needs_images = parts
        .iter()
        .any(|p| *p != Part::Controller || image.is_none());
    let loader = match (&reached.loader, needs_images) {
        (Some(loader), _) => loader.clone(),
        (None, false) => Loader::K3sImagesDir {
            dir: options.report_dir.join("unused-images"),
        },
        (None, true) => anyhow::bail!(
            "cannot tell how images reach this cluster's nodes: pass --load-images \
             containerd:SOCKET, kind:CLUSTER, k3d:CLUSTER or k3s-dir:DIRECTORY"
        ),
    };
    let target = Target {
        client: client.clone(),
        loader,
        cache: clusters::toolchain::cache_dir(),
        work_dir: options.report_dir.join("install"),
    };
    let mut config = suite_config();
    config.webhooks_enabled = true;
    config.controller_manager.leader_election = false;
    let request = install::Request {
        parts,
        kueue: options.kueue.clone(),
        fake_nodes: 2,
        node_shape: NodeShape::gpu(8),
        controller_binary: match (&image, installed) {
            (None, false) => Some(find_binary()?),
            _ => None,
        },
        controller: controller_manifests::Settings {
            // Scenarios that keep the controller down still create AppWrappers.
            failure_policy: "Ignore".into(),
            config_yaml: objects::yaml::render(&operator_config(
                &config,
                &Placement::InCluster { namespace },
            )?),
            appwrapper_selector: shared_selector(&options.controller),
            ..controller_manifests::Settings::release(image.as_deref().unwrap_or_default())
        },
    };
    install::install(&target, &request, &|line| println!("awconf: {line}")).await?;
    check_kwok_stages(&client).await?;

    let kueue_log = options.report_dir.join("kueue.log");
    let kueue_logs = PodLogs::follow(
        client.clone(),
        install::kueue::NAMESPACE,
        install::kueue::POD_SELECTOR,
        &kueue_log,
    )?;
    let controller = ControllerUnderTest::new(
        options.controller.clone(),
        config.clone(),
        &reached.kubeconfig,
        &options.report_dir,
    )?
    .shared();
    let controller_log = controller
        .log_path()
        .map(Path::to_path_buf)
        .context("an in-cluster controller has a log file")?;
    let controller_logs = PodLogs::follow(
        client.clone(),
        namespace,
        controller_manifests::POD_SELECTOR,
        &controller_log,
    )?;
    let workload = Workload {
        client: client.clone(),
        namespace: namespace.into(),
        deployment: controller_manifests::DEPLOYMENT.into(),
        selector: controller_manifests::POD_SELECTOR.into(),
    };
    let restore = match installed {
        true => Some(installed::configure(&client, namespace, &config, &workload).await?),
        false => None,
    };
    let controller = controller.with_workload(workload);
    crate::webhook::wait_until_effective(&client, || None).await?;
    let fake_gpu_nodes = advertises_gpus(&client).await?;
    Ok(Environment {
        client: steps_client(&reached.kubeconfig).await?,
        watch_client: client,
        kubeconfig: reached.kubeconfig,
        kueue_log,
        audit_log: options.audit_log.clone(),
        etcd: None,
        controller,
        restore,
        capabilities: Capabilities {
            // Checked above: the suite's stages are there.
            simulated_pod_outcomes: true,
            fake_gpu_nodes,
            // Its Deployment is scaled down and up.
            restartable_control_plane: true,
        },
        kueue: None,
        keep: vec![
            reached.keep,
            Box::new(kueue_logs),
            Box::new(controller_logs),
        ],
    })
}

async fn reach(choice: &ClusterChoice) -> anyhow::Result<Reached> {
    let everything = Part::ALL.to_vec();
    Ok(match choice {
        ClusterChoice::Local => anyhow::bail!("the local cluster is not reached remotely"),
        ClusterChoice::Existing {
            kubeconfig,
            context,
            install,
            images,
        } => {
            let source = kubeconfig.clone().or_else(|| {
                clusters::kubeconfig::kubectl_default_paths()
                    .into_iter()
                    .next()
            });
            println!(
                "awconf: connecting to the cluster of {}",
                match kubeconfig {
                    Some(path) => path.display().to_string(),
                    None => clusters::kubeconfig::describe_kubectl_default(),
                }
            );
            let cluster = ExistingCluster::connect(kubeconfig.clone(), context.clone()).await?;
            Reached {
                kubeconfig: cluster.kubeconfig().to_path_buf(),
                loader: images.clone().or_else(|| {
                    source
                        .as_deref()
                        .and_then(clusters::providers::local::image_loader_for)
                }),
                install: install.clone(),
                keep: Box::new(cluster),
            }
        }
        ClusterChoice::Created(provider) => {
            println!("awconf: {}", provider.creating());
            let cluster = provider.create().await?;
            Reached {
                kubeconfig: cluster.kubeconfig().to_path_buf(),
                loader: Some(cluster.loader()),
                install: everything,
                keep: Box::new(cluster),
            }
        }
    })
}

async fn advertises_gpus(client: &kube::Client) -> anyhow::Result<bool> {
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client.clone());
    let list = nodes.list(&Default::default()).await?;
    Ok(list.items.iter().any(|n| {
        n.status
            .as_ref()
            .and_then(|s| s.allocatable.as_ref())
            .and_then(|a| a.get(clusters::nodes::GPU))
            .is_some_and(|q| q.0 != "0")
    }))
}

/// The suite steers pods through KWOK stages; a cluster without them cannot run it.
async fn check_kwok_stages(client: &kube::Client) -> anyhow::Result<()> {
    let stages = install::kwok::stages()?;
    let resource = kube::discovery::ApiResource {
        group: "kwok.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "kwok.x-k8s.io/v1alpha1".into(),
        kind: "Stage".into(),
        plural: "stages".into(),
    };
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(client.clone(), &resource);
    for stage in stages {
        let name = stage["metadata"]["name"].as_str().unwrap_or_default();
        tokio::time::timeout(Duration::from_secs(10), api.get(name))
            .await
            .context("the API server did not answer")?
            .with_context(|| {
                format!(
                    "the cluster lacks the suite's KWOK stage {name}, which steers pod outcomes; \
                     install KWOK with its stages with --install kwok"
                )
            })?;
    }
    Ok(())
}
