//! A real kubelet node on the embedded cluster: pods from images built here (no registry) run
//! in containerd and end as their processes do; pods reach the API server through the
//! `kubernetes` Service; and nothing of the node is left on the machine afterwards.
//!
//! Needs root and the host packages of `clusters::providers::local::node::prerequisites::INSTALL`; without
//! them the cluster does not come up and the test fails with that command.

mod support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use clusters::images::{self, Loader};
use clusters::providers::local::node::config::NodePaths;
use clusters::providers::local::node::{NODE_NAME, REAL_NODE_TAINT, cleanup};
use clusters::providers::local::{LocalCluster, LocalOptions};
use clusters::{Cluster, process};
use k8s_openapi::api::core::v1::{Node, Pod, ServiceAccount};
use kube::api::{Api, LogParams, PostParams};
use serde_json::json;
use support::{eventually, namespace};

/// One real node per machine: the tests of this file take turns.
static ONE_NODE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn pod(name: &str, image: &str, command: Option<&str>, args: &[&str]) -> Pod {
    let mut container = json!({
        "name": "main",
        "image": image,
        "imagePullPolicy": "Never",
        "args": args,
    });
    if let Some(script) = command {
        container["command"] = json!(["sh", "-c", script]);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": NODE_NAME,
            "restartPolicy": "Never",
            "tolerations": [{"key": REAL_NODE_TAINT, "operator": "Exists"}],
            "containers": [container],
        },
    }))
    .unwrap()
}

/// Waits for the pod to finish; returns its phase and its container's exit code.
async fn finished(pods: &Api<Pod>, name: &str) -> (String, i32) {
    eventually(120, &format!("pod {name} to finish"), || async {
        let pod = pods.get(name).await.ok()?;
        let status = pod.status?;
        let phase = status.phase?;
        if phase != "Succeeded" && phase != "Failed" {
            return None;
        }
        let terminated = status
            .container_statuses?
            .first()?
            .state
            .clone()?
            .terminated?;
        Some((phase, terminated.exit_code))
    })
    .await
}

async fn logs(pods: &Api<Pod>, name: &str) -> String {
    pods.logs(name, &LogParams::default())
        .await
        .unwrap_or_else(|e| panic!("logs of {name}: {e}"))
}

async fn up() -> LocalCluster {
    LocalCluster::up(LocalOptions {
        nodes: 1,
        real_nodes: 1,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("the cluster with a real node did not come up: {e}"))
}

/// What a torn-down node must not leave: processes (its own, shims, containers), container
/// cgroups, mounts, the bridge, iptables chains.
fn assert_nothing_left(work_dir: &Path, pids: &[(String, u32)], containers: &[String]) {
    for (name, pid) in pids {
        assert!(
            !process::is_alive(*pid),
            "{name} (pid {pid}) is still running"
        );
    }
    assert!(!containers.is_empty(), "the node ran no container");
    for id in containers {
        assert_eq!(
            cleanup::container_cgroups(id),
            Vec::<PathBuf>::new(),
            "container {id} has cgroups left"
        );
    }
    let node_dir = work_dir.join("node");
    assert_eq!(
        clusters::mounts::mounts_under(&node_dir),
        Vec::<PathBuf>::new()
    );
    assert!(
        cleanup::shim_pids(&NodePaths::new(work_dir)).is_empty(),
        "containerd shims are still running"
    );
    assert!(!cleanup::bridge_exists(), "the pod bridge is still there");
    let rules = std::process::Command::new("iptables-save")
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout);
    let kube: Vec<_> = rules.lines().filter(|l| l.contains("KUBE-")).collect();
    assert!(kube.is_empty(), "iptables rules left: {kube:?}");
}

#[tokio::test]
async fn a_real_node_runs_local_images_to_their_exit_codes_and_leaves_nothing_behind() {
    let _turn = ONE_NODE.lock().await;
    let started = Instant::now();
    let mut cluster = up().await;
    let node = cluster.real_node().expect("the cluster has a real node");
    eprintln!(
        "[figure] real node start (containerd, images, kubelet, kube-proxy, Ready): {:.1}s; whole cluster up: {:.1}s",
        node.started_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let work_dir = cluster.work_dir().to_path_buf();
    let client = namespace(&cluster, "real-node").await;

    let nodes: Api<Node> = Api::all(client.clone());
    let real = nodes.get(NODE_NAME).await.unwrap();
    assert!(clusters::nodes::is_ready(&real));
    let runtime = real
        .status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.container_runtime_version.clone())
        .unwrap_or_default();
    assert!(runtime.starts_with("containerd://"), "runtime {runtime:?}");

    // Pods get the namespace's service-account token, so the account must exist first.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "real-node");
    eventually(30, "the default ServiceAccount", || async {
        accounts.get_opt("default").await.ok().flatten()
    })
    .await;

    // A dynamically linked binary of this machine, with the libraries it loads.
    let archive = images::write(
        &images::binary_image("awconf.local/echo:1", Path::new("/usr/bin/echo")).unwrap(),
        &work_dir.join("images"),
        "echo",
    )
    .unwrap();
    let node = cluster.real_node().unwrap();
    node.load_image(&archive.path).unwrap();
    assert_eq!(
        Loader::Containerd {
            address: node.containerd_socket()
        }
        .command(&archive.path)
        .unwrap()[0],
        "ctr"
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), "real-node");
    let post = PostParams::default();
    let plain: [(&str, &str, Option<&str>, &[&str]); 3] = [
        (
            "succeeds",
            images::BUSYBOX_IMAGE,
            Some("echo from busybox; sleep 1"),
            &[],
        ),
        (
            "fails",
            images::BUSYBOX_IMAGE,
            Some("echo failing; sleep 1; exit 7"),
            &[],
        ),
        (
            "echo",
            "awconf.local/echo:1",
            None,
            &["from a glibc binary"],
        ),
    ];
    for (name, image, script, args) in plain {
        pods.create(&post, &pod(name, image, script, args))
            .await
            .unwrap();
    }
    // Plain HTTP to the API server's TLS port through the `kubernetes` Service: Go's TLS server
    // answers it with a 400 that names itself.
    pods.create(
        &post,
        &pod(
            "reaches-api",
            images::BUSYBOX_IMAGE,
            Some(
                "test -s /var/run/secrets/kubernetes.io/serviceaccount/token && \
                 printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT",
            ),
            &[],
        ),
    )
    .await
    .unwrap();

    assert_eq!(finished(&pods, "succeeds").await, ("Succeeded".into(), 0));
    assert_eq!(finished(&pods, "fails").await, ("Failed".into(), 7));
    assert_eq!(finished(&pods, "echo").await, ("Succeeded".into(), 0));
    assert_eq!(
        finished(&pods, "reaches-api").await,
        ("Succeeded".into(), 0)
    );
    assert!(logs(&pods, "succeeds").await.contains("from busybox"));
    assert!(logs(&pods, "echo").await.contains("from a glibc binary"));
    let answer = logs(&pods, "reaches-api").await;
    assert!(
        answer.contains("Client sent an HTTP request to an HTTPS server"),
        "the API server did not answer through the kubernetes Service: {answer:?}"
    );
    let pod_ip = pods
        .get("succeeds")
        .await
        .unwrap()
        .status
        .and_then(|s| s.pod_ip)
        .unwrap_or_default();
    assert!(pod_ip.starts_with("10.123."), "pod IP {pod_ip:?}");

    // A running pod at teardown: its container, sandbox and volumes must go too.
    pods.create(
        &post,
        &pod(
            "still-running",
            images::BUSYBOX_IMAGE,
            Some("sleep 600"),
            &[],
        ),
    )
    .await
    .unwrap();
    eventually(60, "the pod still-running to run", || async {
        let phase = pods.get("still-running").await.ok()?.status?.phase?;
        (phase == "Running").then_some(())
    })
    .await;

    let pids = cluster.pids();
    let containers = cleanup::container_ids(&NodePaths::new(&work_dir));
    assert!(
        containers
            .iter()
            .any(|id| !cleanup::container_cgroups(id).is_empty()),
        "the running pod's containers have cgroups"
    );
    let stopping = Instant::now();
    cluster.stop().await.unwrap();
    eprintln!(
        "[figure] teardown with a pod running: {:.1}s",
        stopping.elapsed().as_secs_f64()
    );
    assert_nothing_left(&work_dir, &pids, &containers);
}

const PANIC_HELPER: &str = "AWCONF_REAL_NODE_PANIC_HELPER";

/// Run only as a child of `a_panicking_test_leaves_no_node_behind`: a real node with a running
/// pod, then a panic.
#[tokio::test]
async fn panic_helper_runs_a_pod_on_a_real_node_and_panics() {
    let Ok(out) = std::env::var(PANIC_HELPER) else {
        return;
    };
    let cluster = up().await;
    let client = namespace(&cluster, "panics").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "panics");
    eventually(30, "the default ServiceAccount", || async {
        accounts.get_opt("default").await.ok().flatten()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client, "panics");
    pods.create(
        &PostParams::default(),
        &pod("sleeps", images::BUSYBOX_IMAGE, Some("sleep 600"), &[]),
    )
    .await
    .unwrap();
    eventually(60, "the pod to run", || async {
        let phase = pods.get("sleeps").await.ok()?.status?.phase?;
        (phase == "Running").then_some(())
    })
    .await;
    let record = json!({
        "work_dir": cluster.work_dir(),
        "pids": cluster.pids(),
        "containers": cleanup::container_ids(&NodePaths::new(cluster.work_dir())),
    });
    std::fs::write(out, record.to_string()).unwrap();
    panic!("failing on purpose with a real node running a pod");
}

#[tokio::test]
async fn a_panicking_test_leaves_no_node_behind() {
    let _turn = ONE_NODE.lock().await;
    let out = std::env::temp_dir().join(format!("awconf-panic-node-{}", std::process::id()));
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "panic_helper_runs_a_pod_on_a_real_node_and_panics",
            "--nocapture",
        ])
        .env(PANIC_HELPER, &out)
        .output()
        .await
        .unwrap();
    assert!(
        !output.status.success(),
        "the helper test was meant to fail:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap_or_else(|_| {
            panic!(
                "the helper did not get its node up:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )
        }))
        .unwrap();
    let _ = std::fs::remove_file(&out);
    let work_dir = PathBuf::from(record["work_dir"].as_str().unwrap());
    let pids: Vec<(String, u32)> = serde_json::from_value(record["pids"].clone()).unwrap();
    let containers: Vec<String> = serde_json::from_value(record["containers"].clone()).unwrap();
    assert!(pids.iter().any(|(name, _)| name == "kubelet"));
    eventually(
        10,
        "every process of the panicked test to be gone",
        || async {
            pids.iter()
                .all(|(_, pid)| !process::is_alive(*pid))
                .then_some(())
        },
    )
    .await;
    assert_nothing_left(&work_dir, &pids, &containers);
    assert!(
        !work_dir.exists(),
        "the work dir {} is left",
        work_dir.display()
    );
}

/// The warnings logged on this thread while `f` runs, and this crate's debug messages: the
/// teardown's account of what went wrong on the way.
fn with_logs<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata};

    struct Logged(std::sync::Arc<std::sync::Mutex<Vec<String>>>);
    struct Message(String);
    impl Visit for Message {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                self.0 = format!("{value:?}");
            }
        }
    }
    impl tracing::Subscriber for Logged {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            *metadata.level() <= tracing::Level::WARN
                || (*metadata.level() <= tracing::Level::DEBUG
                    && metadata.target().starts_with("clusters"))
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut message = Message(String::new());
            event.record(&mut message);
            self.0.lock().unwrap().push(message.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    let logged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let value = tracing::subscriber::with_default(Logged(logged.clone()), f);
    let logged = logged.lock().unwrap().clone();
    (value, logged)
}

/// The `ctr tasks delete` calls against `socket` running now, as (pid, task id).
fn task_deletes(socket: &str) -> Vec<(i32, String)> {
    let address = format!("--address={socket}");
    procfs::process::all_processes()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|p| {
            let args = p.cmdline().ok()?;
            let deletes = args.first()?.ends_with("ctr")
                && args.contains(&address)
                && args.windows(2).any(|w| w[0] == "tasks" && w[1] == "delete");
            deletes.then(|| (p.pid(), args.last().cloned().unwrap_or_default()))
        })
        .collect()
}

/// The node's tasks, each with its process and that process's shim, from `ctr tasks ls`.
fn tasks(work_dir: &Path) -> Vec<(String, u32, u32)> {
    let listed = cleanup::run(
        &cleanup::ctr(&NodePaths::new(work_dir), &["tasks", "ls"]),
        std::time::Duration::from_secs(30),
    )
    .unwrap();
    listed
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let pid: u32 = fields[1].parse().unwrap();
            let shim = procfs::process::Process::new(pid as i32)
                .unwrap()
                .stat()
                .unwrap()
                .ppid as u32;
            (fields[0].to_string(), pid, shim)
        })
        .collect()
}

/// The network namespace of a process, as `net:[inode]`.
fn netns(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .unwrap()
        .display()
        .to_string()
}

/// Every network namespace a process is in or a mount holds, on the whole machine.
fn live_netns() -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path().join("ns/net")).ok())
        .map(|l| l.display().to_string())
        .collect();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    found.extend(
        mounts
            .lines()
            .filter(|l| l.contains(" - nsfs "))
            .filter_map(|l| l.split(' ').nth(3))
            .map(str::to_string),
    );
    found
}

/// What the faults injected during teardown did.
#[derive(Debug, Default)]
struct Injected {
    /// The task whose delete was running when its shim was killed, and the shim's pid.
    shim_killed: Option<(String, u32)>,
    /// The task whose delete was running when containerd was killed.
    containerd_killed_during: Option<String>,
}

/// Watches the node's `ctr tasks delete` calls: 30 ms into the first it kills that task's
/// shim; at the start of the next it kills containerd.
fn inject_faults(
    socket: String,
    shims: std::collections::HashMap<String, u32>,
    containerd: u32,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Injected> {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut injected = Injected::default();
        let mut first: Option<i32> = None;
        while !done.load(Ordering::Relaxed) {
            for (pid, task) in task_deletes(&socket) {
                match first {
                    None => {
                        first = Some(pid);
                        std::thread::sleep(std::time::Duration::from_millis(30));
                        if let Some(shim) = shims.get(&task) {
                            process::signal(*shim, rustix::process::Signal::KILL);
                            injected.shim_killed = Some((task, *shim));
                        }
                    }
                    Some(first) if first != pid => {
                        process::signal(containerd, rustix::process::Signal::KILL);
                        injected.containerd_killed_during = Some(task);
                        return injected;
                    }
                    Some(_) => {}
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        injected
    })
}

/// Stops a detached cluster if the test did not get to.
struct DownOnDrop(Option<PathBuf>);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = clusters::providers::local::down(&dir, &clusters::toolchain::cache_dir());
        }
    }
}

/// issue #48: `awconf cluster down` on a real node must finish the first time even when a
/// shim and containerd go away while it deletes the node's tasks (a shim that is gone answers
/// `ttrpc: closed`, a containerd that is gone refuses connections): it exits 0 and nothing of
/// the cluster is left, no process, mount, network namespace or file.
#[tokio::test]
async fn cluster_down_finishes_the_first_time_when_a_shim_and_containerd_die_while_tasks_are_deleted()
 {
    let _turn = ONE_NODE.lock().await;
    let cluster = LocalCluster::up(LocalOptions {
        nodes: 1,
        real_nodes: 1,
        detached: true,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("the cluster with a real node did not come up: {e}"));
    let work_dir = cluster.work_dir().to_path_buf();
    let mut guard = DownOnDrop(Some(work_dir.clone()));
    let client = namespace(&cluster, "teardown").await;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "teardown");
    eventually(30, "the default ServiceAccount", || async {
        accounts.get_opt("default").await.ok().flatten()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client, "teardown");
    let names = ["one", "two", "three"];
    for name in names {
        pods.create(
            &PostParams::default(),
            &pod(name, images::BUSYBOX_IMAGE, Some("sleep 600"), &[]),
        )
        .await
        .unwrap();
    }
    for name in names {
        eventually(60, &format!("the pod {name} to run"), || async {
            let phase = pods.get(name).await.ok()?.status?.phase?;
            (phase == "Running").then_some(())
        })
        .await;
    }

    let pids = cluster.pids();
    let containerd = pids
        .iter()
        .find(|(name, _)| name == "containerd")
        .map(|(_, pid)| *pid)
        .unwrap();
    let tasks = tasks(&work_dir);
    assert_eq!(tasks.len(), 2 * names.len(), "tasks {tasks:?}");
    let pod_netns: Vec<String> = tasks.iter().map(|(_, pid, _)| netns(*pid)).collect();
    assert!(
        !pod_netns.contains(&netns(std::process::id())),
        "the pods have network namespaces of their own"
    );
    let mut all_pids = pids.clone();
    all_pids.extend(
        tasks
            .iter()
            .flat_map(|(id, pid, shim)| [(id.clone(), *pid), (format!("shim of {id}"), *shim)]),
    );
    let containers = cleanup::container_ids(&NodePaths::new(&work_dir));
    // Detached: the processes keep running; `cluster down` stops them.
    drop(cluster);

    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let faults = inject_faults(
        NodePaths::new(&work_dir)
            .containerd_socket()
            .display()
            .to_string(),
        tasks
            .iter()
            .map(|(id, _, shim)| (id.clone(), *shim))
            .collect(),
        containerd,
        done.clone(),
    );
    let dir = work_dir.clone();
    let (down, logged) = tokio::task::spawn_blocking(move || {
        with_logs(|| clusters::providers::local::down(&dir, &clusters::toolchain::cache_dir()))
    })
    .await
    .unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let injected = faults.join().unwrap();
    eprintln!("faults injected: {injected:?}");
    for line in &logged {
        eprintln!("teardown logged: {line}");
    }
    let stopped = down.unwrap_or_else(|e| panic!("cluster down failed the first time: {e}"));
    guard.0 = None;
    assert!(
        injected.containerd_killed_during.is_some(),
        "containerd was not killed while tasks were deleted: {injected:?}"
    );
    eprintln!("cluster down stopped: {stopped:?}");

    assert_nothing_left(&work_dir, &all_pids, &containers);
    let live = live_netns();
    for ns in &pod_netns {
        assert!(
            !live.contains(ns),
            "the pod network namespace {ns} is still held"
        );
    }
    let rules = std::process::Command::new("iptables-save")
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout);
    let cni: Vec<_> = rules.lines().filter(|l| l.contains("CNI-")).collect();
    assert!(cni.is_empty(), "CNI iptables rules left: {cni:?}");
    assert!(
        !work_dir.exists(),
        "the cluster's files are left in {}",
        work_dir.display()
    );
}
