//! Kernel settings a node changes, put back at teardown: the kubelet sets the panic and
//! overcommit tunables it wants (`protectKernelDefaults: false`), and the CNI bridge turns on
//! IPv4 forwarding for its gateway.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const CHANGED_BY_THE_NODE: &[&str] = &[
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.ip_forward",
];

fn proc_path(key: &str) -> PathBuf {
    Path::new("/proc/sys").join(key.replace('.', "/"))
}

/// Records the current values in `file`, unless a snapshot is already there (a restart must
/// not record the node's own values as the machine's).
pub fn snapshot(file: &Path) -> Result<(), String> {
    if file.exists() {
        return Ok(());
    }
    let values: BTreeMap<&str, String> = CHANGED_BY_THE_NODE
        .iter()
        .filter_map(|key| {
            let value = std::fs::read_to_string(proc_path(key)).ok()?;
            Some((*key, value.trim().to_string()))
        })
        .collect();
    let json = serde_json::to_string_pretty(&values).map_err(|e| e.to_string())?;
    std::fs::write(file, json).map_err(|e| format!("{}: {e}", file.display()))
}

/// Writes back the recorded values that changed, and removes the snapshot.
pub fn restore(file: &Path) -> Result<(), String> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Ok(());
    };
    let values: BTreeMap<String, String> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut failed = Vec::new();
    for (key, value) in &values {
        let path = proc_path(key);
        let now = std::fs::read_to_string(&path).unwrap_or_default();
        if now.trim() != value && std::fs::write(&path, value).is_err() {
            failed.push(format!("{key}={value}"));
        }
    }
    let _ = std::fs::remove_file(file);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "cannot restore kernel settings: {}",
            failed.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_proc_sys_paths() {
        assert_eq!(
            proc_path("kernel.keys.root_maxkeys"),
            PathBuf::from("/proc/sys/kernel/keys/root_maxkeys")
        );
    }

    #[test]
    fn a_snapshot_is_taken_once_and_restoring_without_one_does_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sysctls.json");
        snapshot(&file).unwrap();
        let first: BTreeMap<String, String> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(first.contains_key("kernel.panic"));
        std::fs::write(&file, "{\"kernel.panic\": \"recorded\"}").unwrap();
        snapshot(&file).unwrap();
        assert!(std::fs::read_to_string(&file).unwrap().contains("recorded"));
        restore(&dir.path().join("absent.json")).unwrap();
    }
}
