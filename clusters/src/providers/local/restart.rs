//! Restarting a part of the control plane in place, as a crash and its supervisor would: SIGKILL
//! to its process group, a pause, the same command again, then its health check. Chaos runs
//! (`awconf bench chaos`) restart etcd and the API server this way under load.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{LocalCluster, LocalError};
use crate::cluster::ClusterError;
use crate::health;
use crate::process::Process;
use crate::work_dirs::io;

/// How a component was started.
#[derive(Clone, Debug)]
pub(super) struct Launch {
    name: String,
    binary: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, String)>,
    detached: bool,
}

impl Launch {
    pub(super) fn new(
        name: &str,
        binary: &Path,
        args: Vec<String>,
        envs: &[(&str, String)],
        detached: bool,
    ) -> Self {
        Launch {
            name: name.to_string(),
            binary: binary.to_path_buf(),
            args,
            envs: envs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            detached,
        }
    }
}

/// A part of the control plane that can be restarted in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlPlanePart {
    Etcd,
    ApiServer,
}

impl ControlPlanePart {
    fn process_name(self) -> &'static str {
        match self {
            ControlPlanePart::Etcd => "etcd",
            ControlPlanePart::ApiServer => "kube-apiserver",
        }
    }
}

impl std::fmt::Display for ControlPlanePart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.process_name())
    }
}

impl LocalCluster {
    /// Starts again, with the same command, each component of the control plane that has
    /// exited, as a kubelet restarts its static pods (kube-scheduler exits on purpose when it
    /// finds its cache inconsistent after an API server outage). Returns what was restarted,
    /// with how each had exited.
    pub fn revive_exited(&mut self) -> Result<Vec<String>, ClusterError> {
        let mut revived = Vec::new();
        for index in 0..self.processes.len() {
            let Some(status) = self.processes[index].exited() else {
                continue;
            };
            let name = self.processes[index].name.clone();
            let Some(launch) = self.launches.iter().find(|l| l.name == name).cloned() else {
                // Not a part of the control plane (Kueue, a controller): its owner restarts it.
                continue;
            };
            // Its log goes on in the same file: its last words are what says why it exited.
            let last = self.processes[index].log_tail(1);
            let process = self.launch_again(&launch)?;
            let _ = std::mem::replace(&mut self.processes[index], process);
            revived.push(format!(
                "{name} (it had exited: {status}; its log ended: {})",
                last.trim()
            ));
        }
        if !revived.is_empty() {
            self.write_state()?;
        }
        Ok(revived)
    }

    fn launch_again(&self, launch: &Launch) -> Result<Process, ClusterError> {
        let name = &launch.name;
        let log = self.work_dir.join("logs").join(format!("{name}.log"));
        let envs: Vec<(&str, String)> = launch
            .envs
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        Process::start(
            name,
            &launch.binary,
            &launch.args,
            &envs,
            &log,
            launch.detached,
        )
        .map_err(|source| {
            LocalError::Restart {
                name: name.to_string(),
                source,
            }
            .into()
        })
    }

    /// SIGKILLs `part`, waits `down`, starts it again with the same command and waits until
    /// it is healthy (etcd's `/health`, the API server's `/readyz`). Returns the time from the
    /// kill until it was healthy again.
    pub async fn restart_part(
        &mut self,
        part: ControlPlanePart,
        down: Duration,
    ) -> Result<Duration, ClusterError> {
        let name = part.process_name();
        let launch = self
            .launches
            .iter()
            .find(|l| l.name == name)
            .cloned()
            .ok_or_else(|| LocalError::NotStarted(name.to_string()))?;
        let index = self
            .processes
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| LocalError::NotRunning(name.to_string()))?;
        let killed = Instant::now();
        self.processes[index].kill();
        tokio::time::sleep(down).await;
        let process = self.launch_again(&launch)?;
        // The old one has exited: dropping it signals nothing that still runs.
        let _ = std::mem::replace(&mut self.processes[index], process);
        let pki = self.work_dir.join("pki");
        let read = |file: &str| std::fs::read_to_string(pki.join(file)).map_err(|e| io(&pki, e));
        let admin = health::admin_http(
            &read("ca.crt")?,
            &(read("admin.crt")? + &read("admin.key")?),
        )?;
        let url = match part {
            ControlPlanePart::Etcd => format!("http://127.0.0.1:{}/health", self.ports.etcd),
            ControlPlanePart::ApiServer => {
                format!("https://127.0.0.1:{}/readyz", self.ports.apiserver)
            }
        };
        health::wait_ready(
            &mut self.processes[index],
            &admin,
            &url,
            Duration::from_secs(90),
        )
        .await?;
        self.write_state()?;
        Ok(killed.elapsed())
    }
}
