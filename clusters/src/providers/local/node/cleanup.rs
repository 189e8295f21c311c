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

/// Runs `argv` with a deadline; `Err` holds what to report.
pub fn run(argv: &[String], timeout: Duration) -> Result<String, String> {
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
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "`{}` failed ({}): {stdout}{}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
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
pub fn remove_containers(paths: &NodePaths) -> Result<(), String> {
    let timeout = Duration::from_secs(60);
    let tasks = run(&ctr(paths, &["tasks", "ls", "-q"]), timeout)?;
    for task in tasks.split_whitespace() {
        // Killing a pod's sandbox takes the pod's other containers with it: their tasks may be
        // gone by the time their turn comes.
        match run(&ctr(paths, &["tasks", "delete", "--force", task]), timeout) {
            Err(e) if !e.contains("not found") => return Err(e),
            _ => {}
        }
    }
    let containers = run(&ctr(paths, &["containers", "ls", "-q"]), timeout)?;
    let containers: Vec<&str> = containers.split_whitespace().collect();
    if !containers.is_empty() {
        let mut args = vec!["containers", "delete"];
        args.extend(&containers);
        run(&ctr(paths, &args), timeout)?;
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
            left.push(cgroup.display().to_string());
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

    #[test]
    fn a_command_that_overruns_its_deadline_is_killed() {
        let err = run(&["sleep".into(), "5".into()], Duration::from_millis(200)).unwrap_err();
        assert!(err.contains("did not finish"), "{err}");
    }
}
