//! A name and a directory of their own for each cluster this process brings up, so that runs
//! side by side (two CI jobs on one machine, or one process with two clusters) never share a
//! cluster, a kubeconfig or a mount.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cluster::ClusterError;

/// `awconf-<pid>-<n>`: the same shape as the local cluster's directories, so the local
/// provider's sweep of dead processes' directories also takes ours.
pub fn cluster_name(pid: u32, n: usize) -> String {
    format!("awconf-{pid}-{n}")
}

/// The next unused cluster name of this process.
pub fn next_cluster_name() -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    cluster_name(std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// `<tmp>/<cluster>-<provider>`: apart from the local provider's `<tmp>/awconf-<pid>-<n>`,
/// whose counter is not ours.
pub fn work_dir_path(tmp: &Path, cluster: &str, provider: &str) -> PathBuf {
    tmp.join(format!("{cluster}-{provider}"))
}

/// A fresh directory only we can read: kubeconfigs hold credentials.
pub fn create_work_dir(cluster: &str, provider: &str) -> Result<PathBuf, ClusterError> {
    let dir = work_dir_path(&std::env::temp_dir(), cluster, provider);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| io(&dir, e))?;
    Ok(dir)
}

/// Writes `text` to a file only we can read.
pub fn write_private(path: &Path, text: &str) -> Result<(), ClusterError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|e| io(path, e))
}

/// Best effort: a container may have left files there that only root can remove.
pub fn remove_work_dir(dir: &Path) {
    if let Err(e) = std::fs::remove_dir_all(dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!("cannot remove {}: {e}", dir.display());
    }
}

pub fn io(path: &Path, e: std::io::Error) -> ClusterError {
    ClusterError::Other(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_directories_are_unique_per_process_counter_and_provider() {
        let tmp = Path::new("/tmp");
        for (pid, n, provider, name, dir) in [
            (7, 0, "kind", "awconf-7-0", "/tmp/awconf-7-0-kind"),
            (7, 1, "kind", "awconf-7-1", "/tmp/awconf-7-1-kind"),
            (8, 0, "k3d", "awconf-8-0", "/tmp/awconf-8-0-k3d"),
            (8, 0, "k3s", "awconf-8-0", "/tmp/awconf-8-0-k3s"),
        ] {
            assert_eq!(cluster_name(pid, n), name);
            assert_eq!(work_dir_path(tmp, name, provider), Path::new(dir));
        }
    }

    #[test]
    fn each_call_gives_a_new_name() {
        assert_ne!(next_cluster_name(), next_cluster_name());
    }

    #[test]
    fn private_files_are_readable_by_their_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig.yaml");
        write_private(&path, "secret").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret");
    }
}
