//! One real node per machine: its bridge, kube-proxy's iptables chains and the kubelet's view of
//! the machine are global. The node that runs records itself in a claim file; a claim whose
//! processes are all gone is a node left by a run that died, cleaned up before the next starts.

use std::path::{Path, PathBuf};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Claim {
    pub work_dir: PathBuf,
    pub pids: Vec<u32>,
}

pub fn claim_path() -> PathBuf {
    PathBuf::from("/run/awconf/real-node.json")
}

pub fn read() -> Option<Claim> {
    let text = std::fs::read_to_string(claim_path()).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write(claim: &Claim) -> Result<(), String> {
    let path = claim_path();
    let text = serde_json::to_string(claim).map_err(|e| e.to_string())?;
    path.parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| std::fs::write(&path, text))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Drops the claim if it is `work_dir`'s.
pub fn release(work_dir: &Path) {
    if read().is_some_and(|c| c.work_dir == work_dir) {
        let _ = std::fs::remove_file(claim_path());
    }
}

impl Claim {
    pub fn is_live(&self) -> bool {
        self.pids.iter().any(|pid| crate::process::is_alive(*pid))
    }
}
