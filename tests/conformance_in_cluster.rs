//! The suite with everything in the cluster, as on kind or k3d: a local cluster with one real
//! kubelet node and no fake ones stands in for an existing cluster, and the run installs
//! Kueue (its release manifests), KWOK (its manifests, the suite's stages, tainted fake
//! nodes) and our controller (its install manifests, our binary as an image) into it; all of
//! them run as pods in containerd. Needs root and the real node's host packages
//! (`ci/setup` installs them).

use std::process::ExitCode;

use awconf::cli::cargo_test::TestBinary;
use clusters::install::Part;
use clusters::{Cluster as _, LocalCluster, LocalOptions};
use conformance_steps::{ClusterChoice, ControllerMode};

#[tokio::main]
async fn main() -> ExitCode {
    println!("awconf: a local cluster with one real node, used as an existing cluster");
    let cluster = match LocalCluster::up(LocalOptions {
        nodes: 0,
        real_nodes: 1,
        ..LocalOptions::default()
    })
    .await
    {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("conformance_in_cluster: the cluster did not come up: {e}");
            println!("0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let audit_log = cluster.appwrapper_audit_log();
    let code = TestBinary {
        name: "conformance_in_cluster",
        controller: None,
    }
    .main(|mut options| {
        options.cluster = ClusterChoice::Existing {
            kubeconfig: Some(kubeconfig),
            context: None,
            install: vec![Part::Kueue, Part::Kwok],
            images: None,
        };
        options.controller = ControllerMode::InCluster { image: None };
        // The cluster is this test's: its API server's audit log is here to read.
        options.audit_log = audit_log;
        // Every controller pod of the run starts on this one node of this machine: the run
        // brings up at most `OWN_CONTROLLER_PODS` scenarios' own at once.
        options.report_dir = options.report_dir.join("in-cluster");
        options
    })
    .await;
    drop(cluster);
    code
}
