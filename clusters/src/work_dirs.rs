//! A name and a directory of their own for each cluster this process brings up, so that runs
//! side by side (two CI jobs on one machine, or one process with two clusters) never share a
//! cluster, a kubeconfig or a mount.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::owner_only;

/// A file or directory of a cluster's work directory that could not be made, written or read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WorkDirError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// `awconf-<pid>-<n>`: the pid lets the local provider's sweep of dead processes' directories
/// recognise what a cluster left behind.
pub fn cluster_name(pid: u32, n: usize) -> String {
    format!("awconf-{pid}-{n}")
}

/// The next unused cluster name of this process.
pub fn next_cluster_name() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    cluster_name(std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A fresh directory only we can read, `awconf-<pid>-<random>[-<provider>]`: kubeconfigs hold
/// credentials.
pub fn create_work_dir(provider: &str) -> Result<PathBuf, WorkDirError> {
    owner_only::temp_dir(provider).map_err(|e| io(&std::env::temp_dir(), e))
}

/// A directory the user named (`awconf cluster up --name`), made private.
pub fn create_named_work_dir(dir: &Path) -> Result<(), WorkDirError> {
    owner_only::create_dir(dir).map_err(|e| io(dir, e))
}

/// Writes `text` to a file only we can read.
pub fn write_private(path: &Path, text: &str) -> Result<(), WorkDirError> {
    owner_only::write(path, text).map_err(|e| io(path, e))
}

/// Removes a cluster's directory, unless something is still mounted under it: deleting
/// through a mount would delete what the mount shows. Best effort: a container may have left
/// files there that only root can remove.
pub fn remove_work_dir(dir: &Path) {
    let mounts = crate::mounts::mounts_under(dir);
    if !mounts.is_empty() {
        tracing::warn!(
            "keeping {}: still mounted under it: {mounts:?}",
            dir.display()
        );
        return;
    }
    if let Err(e) = std::fs::remove_dir_all(dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {e}", dir.display());
    }
}

pub fn io(path: &Path, source: std::io::Error) -> WorkDirError {
    WorkDirError {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_per_process_and_counter() {
        for (pid, n, name) in [
            (7, 0, "awconf-7-0"),
            (7, 1, "awconf-7-1"),
            (8, 0, "awconf-8-0"),
        ] {
            assert_eq!(cluster_name(pid, n), name);
        }
        assert_ne!(next_cluster_name(), next_cluster_name());
    }

    /// Naming and modes are `private`'s; what is ours is that removal takes it all.
    #[test]
    fn a_work_directory_is_removed_with_what_was_written_in_it() {
        let dir = create_work_dir("kind").unwrap();
        assert!(
            dir.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with("-kind")
        );
        write_private(&dir.join("kubeconfig.yaml"), "secret").unwrap();
        remove_work_dir(&dir);
        assert!(!dir.exists());
    }
}
