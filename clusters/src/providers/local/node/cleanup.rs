//! Removing what a real node leaves on the machine once its processes stop: containers and
//! their shims (which containerd starts outside its own process group, so they outlive it),
//! mounts under the node directory (the kubelet's bind mount of its root, pod volumes, sandbox
//! network namespaces, container root file systems), kube-proxy's iptables rules and the CNI
//! bridge.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::config::{BRIDGE, NODE_PATH, NodePaths};
use crate::poll;

/// How a command that ran to its end ended.
struct Finished {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `argv` to its end within `timeout`; `Err` when it cannot start or overruns (it is then
/// killed).
fn run_to_end(argv: &[String], timeout: Duration) -> Result<Finished, String> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env("PATH", NODE_PATH)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    let finished = poll::blocking_until(timeout, Duration::from_millis(20), || {
        !matches!(child.try_wait(), Ok(None))
    });
    if !finished || !matches!(child.try_wait(), Ok(Some(_))) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "`{}` did not finish within {}s",
            argv.join(" "),
            timeout.as_secs()
        ));
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    Ok(Finished {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).to_string(),
        stderr: String::from_utf8_lossy(&out.stderr).to_string(),
    })
}

/// Runs `argv` with a deadline; `Err` holds what to report.
pub fn run(argv: &[String], timeout: Duration) -> Result<String, String> {
    let done = run_to_end(argv, timeout)?;
    if done.status.success() {
        Ok(done.stdout)
    } else {
        Err(format!(
            "`{}` failed ({}): {}{}",
            argv.join(" "),
            done.status,
            done.stdout,
            done.stderr
        ))
    }
}

/// What a failed `ctr` call says about the node's containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtrFailure {
    /// The task is already gone: containerd has no such task (any more), or the task's shim
    /// exited while containerd talked to it, after which containerd removes the task itself.
    TaskGone,
    /// containerd is not answering: its socket refuses connections or is gone, or containerd
    /// went away during the call. Its shims, and the containers they hold, may still run.
    ContainerdGone,
    /// Anything else (a call that overran its deadline among them): the task may still be there.
    Other,
}

/// What containerd 1.6's `ctr` (through gRPC) prints when containerd is not there to answer:
/// `failed to dial "<socket>": connection error: desc = "transport: error while dialing: dial
/// unix <socket>: connect: connection refused"` (or `... context deadline exceeded ...
/// timeout` once the socket file is gone), and `transport is closing: unavailable` or
/// `error reading from server: EOF: unavailable` when containerd dies during the call.
const CONTAINERD_GONE: &[&str] = &[
    "failed to dial",
    "connection refused",
    "transport is closing",
    "error reading from server",
    "connection reset by peer",
];

/// What it prints when the task is already gone: `no running task found: task <id> not found:
/// not found`, `no running task found: not found` or `not found` (containerd has no such task,
/// or no longer once its shim died), `ttrpc: closed: unknown` (the shim exited while containerd
/// talked to it over ttrpc; containerd then cleans the task up on "shim disconnected"), and
/// the kernel's `no such process` or containerd's `process already finished` for a task whose
/// process has exited.
const TASK_GONE: &[&str] = &[
    "not found",
    "ttrpc: closed",
    "ttrpc: server closed",
    "shim disconnected",
    "no such process",
    "process already finished",
];

/// Tells from what a failed `ctr` printed whether its task is already gone, containerd is gone,
/// or neither. containerd's absence is told first: then nothing is known about the task.
pub fn ctr_failure(output: &str) -> CtrFailure {
    let output = output.to_lowercase();
    if CONTAINERD_GONE.iter().any(|m| output.contains(m)) {
        CtrFailure::ContainerdGone
    } else if TASK_GONE.iter().any(|m| output.contains(m)) {
        CtrFailure::TaskGone
    } else {
        CtrFailure::Other
    }
}

/// A `ctr` call that failed, and what its failure says.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CtrError {
    pub failure: CtrFailure,
    pub message: String,
}

/// Runs `ctr args` against the node's containerd; a failure is told apart from what `ctr`
/// printed (not from the command line, which names the socket's path).
pub fn run_ctr(paths: &NodePaths, args: &[&str], timeout: Duration) -> Result<String, CtrError> {
    let argv = ctr(paths, args);
    let done = run_to_end(&argv, timeout).map_err(|message| CtrError {
        failure: CtrFailure::Other,
        message,
    })?;
    if done.status.success() {
        Ok(done.stdout)
    } else {
        Err(ctr_error(&argv, &done))
    }
}

fn ctr_error(argv: &[String], done: &Finished) -> CtrError {
    let output = format!("{}{}", done.stdout, done.stderr);
    CtrError {
        failure: ctr_failure(&output),
        message: format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            done.status,
            output.trim()
        ),
    }
}

/// `ctr` against the node's containerd, in the CRI plugin's namespace.
pub fn ctr(paths: &NodePaths, args: &[&str]) -> Vec<String> {
    let mut argv = vec![
        "ctr".to_string(),
        format!("--address={}", paths.containerd_socket().display()),
        "--namespace=k8s.io".to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

pub fn containerd_answers(paths: &NodePaths) -> bool {
    paths.containerd_socket().exists()
        && run(&ctr(paths, &["version"]), Duration::from_secs(5)).is_ok()
}

/// Kills and deletes every task and container of the node's containerd, which must be
/// running. The kubelet is stopped by then, so nothing restarts them.
///
/// A task that is already gone (its shim exited, containerd removed it) is no failure, and one
/// failed delete does not stop the others: what is left is read back from containerd rather
/// than trusted to the exit statuses. Stops at once with a [`CtrFailure::ContainerdGone`] error
/// when containerd goes away: the caller then removes the rest without it.
pub fn remove_containers(paths: &NodePaths) -> Result<(), CtrError> {
    let timeout = Duration::from_secs(60);
    let list = |what: &str| -> Result<Vec<String>, CtrError> {
        let ids = run_ctr(paths, &[what, "ls", "-q"], timeout)?;
        Ok(ids.split_whitespace().map(str::to_string).collect())
    };
    let mut failures = Vec::new();
    let mut tasks = list("tasks")?;
    for round in 0..3 {
        if tasks.is_empty() {
            break;
        }
        if round > 0 {
            // containerd removes a task whose shim died in the background.
            std::thread::sleep(Duration::from_millis(500));
        }
        for task in &tasks {
            // Killing a pod's sandbox takes the pod's other containers with it: their tasks may
            // be gone by the time their turn comes.
            match run_ctr(paths, &["tasks", "delete", "--force", task], timeout) {
                Ok(_) => {}
                Err(e) => match e.failure {
                    CtrFailure::TaskGone => {
                        tracing::debug!("task {task} was already gone: {e}");
                    }
                    CtrFailure::ContainerdGone => return Err(e),
                    CtrFailure::Other => failures.push(e.message),
                },
            }
        }
        tasks = list("tasks")?;
    }
    if !tasks.is_empty() {
        return Err(CtrError {
            failure: CtrFailure::Other,
            message: format!("tasks left: {tasks:?} ({})", failures.join("; ")),
        });
    }
    let containers = list("containers")?;
    if !containers.is_empty() {
        let mut args = vec!["containers", "delete"];
        args.extend(containers.iter().map(String::as_str));
        if let Err(e) = run_ctr(paths, &args, timeout) {
            if e.failure == CtrFailure::ContainerdGone {
                return Err(e);
            }
            let left = list("containers")?;
            if !left.is_empty() {
                return Err(CtrError {
                    failure: CtrFailure::Other,
                    message: format!("containers left: {left:?} ({e})"),
                });
            }
        }
    }
    Ok(())
}

/// Shims started by the node's containerd: their command line names its socket.
pub fn shim_pids(paths: &NodePaths) -> Vec<u32> {
    let socket = paths.containerd_socket().display().to_string();
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter(|p| {
            p.cmdline().is_ok_and(|args| {
                args.first()
                    .is_some_and(|a| a.ends_with("containerd-shim-runc-v2"))
                    && args.contains(&socket)
            })
        })
        .filter_map(|p| u32::try_from(p.pid()).ok())
        .collect()
}

pub fn kill_pids(pids: &[u32]) {
    for pid in pids {
        crate::process::signal(*pid, rustix::process::Signal::KILL);
    }
    poll::blocking_until(Duration::from_secs(5), Duration::from_millis(20), || {
        !pids.iter().any(|p| crate::process::is_alive(*p))
    });
}

/// Kills the shims of the node's containerd by pid (a containerd that went away leaves them
/// running, and the containers under them); reports any that stay.
pub fn kill_shims(paths: &NodePaths) -> Result<(), String> {
    kill_pids(&shim_pids(paths));
    let left = shim_pids(paths);
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("containerd shims still running: pids {left:?}"))
    }
}

/// Every container and sandbox the node's containerd knows of, from its root and state
/// directories (they outlast containerd itself).
pub fn container_ids(paths: &NodePaths) -> Vec<String> {
    let dirs = [
        paths
            .containerd_root()
            .join("io.containerd.grpc.v1.cri/containers"),
        paths
            .containerd_root()
            .join("io.containerd.grpc.v1.cri/sandboxes"),
        paths
            .containerd_state()
            .join("io.containerd.runtime.v2.task/k8s.io"),
    ];
    let mut ids: Vec<String> = dirs
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.flatten())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|name| name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The cgroup directories of a container: `k8s.io/<id>` in each cgroup v1 hierarchy (the kubelet
/// runs without QoS cgroups, so containerd puts containers there), or in the unified one.
pub fn container_cgroups(id: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut found = Vec::new();
    let unified = root.join("k8s.io").join(id);
    if unified.is_dir() {
        found.push(unified);
    }
    if let Ok(hierarchies) = std::fs::read_dir(root) {
        found.extend(
            hierarchies
                .flatten()
                .map(|h| h.path().join("k8s.io").join(id))
                .filter(|p| p.is_dir()),
        );
    }
    found
}

fn container_cgroup_parents() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut parents = vec![root.join("k8s.io")];
    if let Ok(hierarchies) = std::fs::read_dir(root) {
        parents.extend(hierarchies.flatten().map(|h| h.path().join("k8s.io")));
    }
    parents.retain(|p| p.is_dir());
    parents
}

/// Kills whatever still runs in the containers' cgroups (a container whose shim is gone has
/// no other handle) and removes the cgroups, then the `k8s.io` parents if nothing else uses them.
pub fn remove_container_cgroups(ids: &[String]) -> Result<(), String> {
    let cgroups: Vec<PathBuf> = ids.iter().flat_map(|id| container_cgroups(id)).collect();
    let procs = |cgroup: &Path| -> Vec<u32> {
        std::fs::read_to_string(cgroup.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    let pids: Vec<u32> = cgroups.iter().flat_map(|c| procs(c)).collect();
    kill_pids(&pids);
    let mut left = Vec::new();
    for cgroup in &cgroups {
        if std::fs::remove_dir(cgroup).is_err() && cgroup.exists() {
            left.push(format!(
                "{} (processes {:?})",
                cgroup.display(),
                procs(cgroup)
            ));
        }
    }
    if !ids.is_empty() {
        // runc made them for the first container; rmdir fails on one still in use.
        for parent in container_cgroup_parents() {
            let _ = std::fs::remove_dir(parent);
        }
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("container cgroups left: {left:?}"))
    }
}

/// Detaches every mount under `dir`; stacked mounts (the kubelet binds its root onto itself)
/// take several rounds.
pub fn unmount_all(dir: &Path) -> Result<(), String> {
    for _ in 0..10 {
        let mounts = crate::mounts::mounts_under(dir);
        if mounts.is_empty() {
            return Ok(());
        }
        for mount in mounts {
            // Detached: a busy mount goes from the tree at once, never blocks.
            let _ = rustix::mount::unmount(&mount, rustix::mount::UnmountFlags::DETACH);
        }
    }
    let left = crate::mounts::mounts_under(dir);
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("mounts left under {}: {left:?}", dir.display()))
    }
}

/// Removes kube-proxy's rules (`kube-proxy --cleanup`).
pub fn remove_proxy_rules(kube_proxy: &Path) -> Result<(), String> {
    if !kube_proxy.is_file() {
        return Ok(());
    }
    run(
        &[kube_proxy.display().to_string(), "--cleanup".into()],
        Duration::from_secs(30),
    )
    .map(|_| ())
}

/// The chains the kubelet adds (its firewall against off-host traffic to 127/8, and the canary
/// and hint chains that tell other tools which iptables backend is in use), as the iptables
/// arguments that remove them; `kube-proxy --cleanup` leaves these.
const KUBELET_RULES: &[&[&str]] = &[
    &["-D", "INPUT", "-j", "KUBE-FIREWALL"],
    &["-D", "OUTPUT", "-j", "KUBE-FIREWALL"],
    &["-F", "KUBE-FIREWALL"],
    &["-X", "KUBE-FIREWALL"],
    &["-X", "KUBE-KUBELET-CANARY"],
    &["-t", "mangle", "-X", "KUBE-IPTABLES-HINT"],
    &["-t", "mangle", "-X", "KUBE-KUBELET-CANARY"],
    &["-t", "nat", "-X", "KUBE-KUBELET-CANARY"],
];

/// Removes the kubelet's chains for IPv4 and IPv6. A chain that is not there is no error;
/// one that stays is.
pub fn remove_kubelet_rules() -> Result<(), String> {
    let mut left = Vec::new();
    for tool in ["iptables", "ip6tables"] {
        if super::prerequisites::find_program(tool).is_none() {
            continue;
        }
        for rule in KUBELET_RULES {
            let mut argv = vec![tool.to_string(), "-w".to_string()];
            argv.extend(rule.iter().map(|a| a.to_string()));
            // Fails when already gone; what is left is checked below.
            let _ = run(&argv, Duration::from_secs(10));
        }
        let saved = run(&[format!("{tool}-save")], Duration::from_secs(10))?;
        left.extend(
            saved
                .lines()
                .filter(|l| l.contains("KUBE-FIREWALL") || l.contains("KUBE-KUBELET-CANARY"))
                .map(|l| format!("{tool}: {l}")),
        );
    }
    if left.is_empty() {
        Ok(())
    } else {
        Err(format!("kubelet iptables rules left: {left:?}"))
    }
}

pub fn bridge_exists() -> bool {
    Path::new("/sys/class/net").join(BRIDGE).exists()
}

pub fn remove_bridge() -> Result<(), String> {
    if !bridge_exists() {
        return Ok(());
    }
    run(
        &["ip".into(), "link".into(), "delete".into(), BRIDGE.into()],
        Duration::from_secs(10),
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctr_talks_to_the_node_socket_in_the_cri_namespace() {
        let paths = NodePaths::new(Path::new("/w"));
        assert_eq!(
            ctr(&paths, &["tasks", "ls", "-q"]).join(" "),
            "ctr --address=/w/node/containerd/containerd.sock --namespace=k8s.io tasks ls -q"
        );
    }

    /// What containerd 1.6.20's `ctr` printed on this machine (with the log line it prints
    /// before its own) when a task's shim was killed before or during `tasks delete --force`
    /// (`ttrpc: closed` came from the real node's teardown, as in issue #48), when containerd
    /// was killed during it, and after.
    #[rstest::rstest]
    #[case::shim_killed_during_delete(
        "time=\"2026-11-28T22:20:11Z\" level=error msg=\"unable to delete 27b0a26e\" \
         error=\"failed to delete task: ttrpc: closed: unknown\"\n\
         ctr: failed to delete task: ttrpc: closed: unknown",
        CtrFailure::TaskGone
    )]
    #[case::process_deleted_with_its_sandbox(
        "time=\"2026-11-28T22:20:12Z\" level=error msg=\"unable to delete eae52fcd\" \
         error=\"failed to delete task: cannot delete a deleted process: not found\"\n\
         ctr: failed to delete task: cannot delete a deleted process: not found",
        CtrFailure::TaskGone
    )]
    #[case::task_deleted_before(
        "time=\"2026-11-28T21:51:25Z\" level=error msg=\"failed to load task from ta\" \
         error=\"no running task found: task ta not found: not found\"\n\
         ctr: no running task found: task ta not found: not found",
        CtrFailure::TaskGone
    )]
    #[case::shim_killed_before("ctr: no running task found: not found", CtrFailure::TaskGone)]
    #[case::shim_killed_at_the_start("ctr: ttrpc: closed: unknown", CtrFailure::TaskGone)]
    #[case::task_removed_during_delete("ctr: not found", CtrFailure::TaskGone)]
    #[case::shim_server_closed("ctr: ttrpc: server closed: unknown", CtrFailure::TaskGone)]
    #[case::process_exited("ctr: process already finished: not found", CtrFailure::TaskGone)]
    #[case::no_such_process("ctr: no such process: unknown", CtrFailure::TaskGone)]
    #[case::containerd_killed_during_call(
        "time=\"2026-11-28T21:52:01Z\" level=error msg=\"failed to load task from k1\" \
         error=\"transport is closing: unavailable\"\nctr: transport is closing: unavailable",
        CtrFailure::ContainerdGone
    )]
    #[case::containerd_dead(
        "ctr: failed to dial \"/w/node/containerd/containerd.sock\": connection error: desc = \
         \"transport: error while dialing: dial unix /w/node/containerd/containerd.sock: \
         connect: connection refused\"",
        CtrFailure::ContainerdGone
    )]
    #[case::socket_removed(
        "ctr: failed to dial \"/w/node/containerd/containerd.sock\": context deadline \
         exceeded: connection error: desc = \"transport: error while dialing: dial \
         unix:///w/node/containerd/containerd.sock: timeout\"",
        CtrFailure::ContainerdGone
    )]
    #[case::containerd_gone_and_the_task_unknown(
        "ctr: error reading from server: EOF: unavailable",
        CtrFailure::ContainerdGone
    )]
    #[case::hung_shim(
        "ctr: failed to delete task: context deadline exceeded: unknown",
        CtrFailure::Other
    )]
    #[case::runc_failed(
        "ctr: runc did not terminate successfully: exit status 1: unknown",
        CtrFailure::Other
    )]
    #[case::permission("ctr: permission denied", CtrFailure::Other)]
    #[case::nothing_printed("", CtrFailure::Other)]
    fn a_failed_ctr_call_is_told_apart_by_what_it_printed(
        #[case] output: &str,
        #[case] expected: CtrFailure,
    ) {
        assert_eq!(ctr_failure(output), expected);
    }

    #[test]
    fn a_failed_ctr_call_is_told_apart_by_its_output_not_its_command_line() {
        use std::os::unix::process::ExitStatusExt;
        // A node directory whose path reads like a failure changes nothing.
        let paths = NodePaths::new(Path::new("/tmp/not found/connection refused"));
        let argv = ctr(&paths, &["tasks", "delete", "--force", "abc"]);
        let done = |stderr: &str| Finished {
            status: std::process::ExitStatus::from_raw(1 << 8),
            stdout: String::new(),
            stderr: stderr.to_string(),
        };
        let err = ctr_error(&argv, &done("ctr: ttrpc: closed: unknown\n"));
        assert_eq!(err.failure, CtrFailure::TaskGone);
        assert!(
            err.message
                .ends_with("failed (exit status: 1): ctr: ttrpc: closed: unknown"),
            "{err}"
        );
        let err = ctr_error(&argv, &done("ctr: permission denied\n"));
        assert_eq!(err.failure, CtrFailure::Other, "{err}");
    }

    #[test]
    fn a_command_that_overruns_its_deadline_is_killed() {
        let err = run(&["sleep".into(), "5".into()], Duration::from_millis(200)).unwrap_err();
        assert!(err.contains("did not finish"), "{err}");
    }
}
