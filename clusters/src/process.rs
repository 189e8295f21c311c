//! Child processes that never outlive the harness.
//!
//! Each child runs in its own process group (so a Ctrl-C in the terminal reaches only us, and we
//! stop children in order) and asks the kernel for SIGKILL when its parent dies. Linux sends that
//! signal when the *thread* that forked the child exits, so every child is forked by one spawner
//! thread that lives as long as the process.

use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rustix::process::{Pid, Signal};

use crate::poll;

type SpawnRequest = (Command, Sender<std::io::Result<Child>>);

fn spawner() -> &'static Mutex<Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("awconf-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .map(|_| ())
            .unwrap_or_else(|e| tracing::error!("cannot start the spawner thread: {e}"));
        Mutex::new(tx)
    })
}

/// A running component of a local cluster.
#[derive(Debug)]
pub struct Process {
    pub name: String,
    pub log: PathBuf,
    child: Child,
}

impl Process {
    /// Starts `program` with `args`, stdout and stderr appended to `log`.
    /// A `detached` process survives the harness (for `cluster up --detach`).
    pub fn start(
        name: &str,
        program: &Path,
        args: &[String],
        envs: &[(&str, String)],
        log: &Path,
        detached: bool,
    ) -> std::io::Result<Self> {
        // A component's log may print tokens or keys.
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(crate::owner_only::FILE_MODE)
            .open(log)?;
        let err = out.try_clone()?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        if !detached {
            let parent = rustix::process::getpid();
            // SAFETY: only system calls (prctl, getppid) run between fork and exec, and the
            // errors are made without allocating.
            unsafe {
                cmd.pre_exec(move || {
                    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
                    // The parent exited before the signal was armed: no one would stop this child.
                    if rustix::process::getppid() != Some(parent) {
                        return Err(rustix::io::Errno::SRCH.into());
                    }
                    Ok(())
                });
            }
        }
        let (tx, rx) = channel();
        spawner()
            .lock()
            .map_err(|_| std::io::Error::other("spawner lock poisoned"))?
            .send((cmd, tx))
            .map_err(|_| std::io::Error::other("spawner thread is gone"))?;
        let child = rx
            .recv()
            .map_err(|_| std::io::Error::other("spawner thread is gone"))??;
        Ok(Self {
            name: name.to_string(),
            log: log.to_path_buf(),
            child,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` once the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM to the process group, then SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if self.exited().is_some() {
            return;
        }
        signal_group(self.pid(), Signal::TERM);
        if !poll::blocking_until(grace, Duration::from_millis(50), || self.exited().is_some()) {
            self.kill();
        }
    }

    /// SIGKILL to the whole process group, as a crash would.
    pub fn kill(&mut self) {
        signal_group(self.pid(), Signal::KILL);
        let _ = self.child.wait();
    }

    /// SIGSTOP to the process group: it stays, frozen, as a stalled VM or a long pause would
    /// leave it, until [`Process::resume`].
    pub fn pause(&self) {
        signal_group(self.pid(), Signal::STOP);
    }

    /// SIGCONT to the process group.
    pub fn resume(&self) {
        signal_group(self.pid(), Signal::CONT);
    }

    /// The last lines of the log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// Signals the process group that `pid` leads; a group already gone is no error.
pub fn signal_group(pid: u32, signal: Signal) {
    if let Some(pid) = pid_of(pid) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// Signals one process; one already gone is no error.
pub fn signal(pid: u32, signal: Signal) {
    if let Some(pid) = pid_of(pid) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

fn pid_of(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

/// SIGTERM to the process group of `pid`, then SIGKILL after `grace`; for processes this
/// process did not start (a detached cluster's).
pub fn stop_pid(pid: u32, grace: Duration) {
    if !is_alive(pid) {
        return;
    }
    signal_group(pid, Signal::TERM);
    poll::blocking_until(grace, Duration::from_millis(50), || !is_alive(pid));
    signal_group(pid, Signal::KILL);
}

pub fn is_alive(pid: u32) -> bool {
    pid_of(pid).is_some_and(|p| rustix::process::test_kill_process(p).is_ok()) && !is_zombie(pid)
}

fn is_zombie(pid: u32) -> bool {
    proc(pid)
        .and_then(|p| p.stat().ok())
        .is_some_and(|stat| stat.state == 'Z')
}

fn proc(pid: u32) -> Option<procfs::process::Process> {
    procfs::process::Process::new(i32::try_from(pid).ok()?).ok()
}

pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<_> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Resident memory of a process in bytes, from /proc.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    Some(proc(pid)?.status().ok()?.vmrss? * 1024)
}
