//! Files and directories only this user can read. A cluster's work directory holds its CA key,
//! its admin key and its kubeconfig: on a shared CI runner, anything readable by others there
//! would make any local user cluster admin.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;

/// A new directory under the system's temporary directory, named `awconf-<pid>-<random>` (and
/// `-<label>` when there is one), mode 0700. Its name cannot be guessed before it exists, so no
/// other user can create it first or link it elsewhere; the pid lets a later run sweep it once
/// this process is gone.
pub fn temp_dir(label: &str) -> std::io::Result<PathBuf> {
    let suffix = if label.is_empty() {
        String::new()
    } else {
        format!("-{label}")
    };
    let dir = tempfile::Builder::new()
        .prefix(&format!("awconf-{}-", std::process::id()))
        .suffix(&suffix)
        .rand_bytes(8)
        .permissions(std::fs::Permissions::from_mode(DIR_MODE))
        .tempdir()?;
    Ok(dir.keep())
}

/// `path` and its missing parents, the last one mode 0700 even if it was there already.
pub fn create_dir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(DIR_MODE))
}

/// Writes `contents` to `path`, mode 0600 even if the file was there already.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    file.write_all(contents.as_ref())
}

/// Puts `contents` at `path`, mode 0600, as a new file renamed over the old one: in a
/// directory this user may write, a file another user left there (root's, from a run through
/// `sudo`) is replaced rather than refused.
pub fn replace(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    file.write_all(contents.as_ref())?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The paths under `root` (itself included) that a user other than the owner can read, write
/// or enter: what a test of a work directory expects to be empty.
pub fn open_to_others(root: &Path) -> std::io::Result<Vec<(PathBuf, u32)>> {
    let mut open = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            open.push((path.clone(), mode));
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    open.sort();
    Ok(open)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_is_a_new_private_file_in_place_of_the_old() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tls.key");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let before = std::fs::metadata(&path).unwrap().ino();
        replace(&path, "new").unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert_ne!(after.ino(), before, "renamed over, not written into");
        assert_eq!(after.mode() & 0o777, FILE_MODE);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn temporary_directories_are_unguessable_and_private() {
        let a = temp_dir("kind").unwrap();
        let b = temp_dir("kind").unwrap();
        assert_ne!(a, b);
        let name = a.file_name().unwrap().to_string_lossy().to_string();
        let prefix = format!("awconf-{}-", std::process::id());
        assert!(
            name.starts_with(&prefix) && name.ends_with("-kind"),
            "{name}"
        );
        assert_eq!(name.len(), prefix.len() + 8 + "-kind".len(), "{name}");
        write(&a.join("key"), "secret").unwrap();
        assert_eq!(open_to_others(&a).unwrap(), Vec::new());
        for dir in [a, b] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn files_and_directories_that_existed_are_made_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("pki");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = dir.join("ca.key");
        std::fs::write(&key, "old").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            open_to_others(&dir).unwrap(),
            vec![(dir.clone(), 0o755), (key.clone(), 0o644)]
        );
        create_dir(&dir).unwrap();
        write(&key, "new").unwrap();
        assert_eq!(open_to_others(&dir).unwrap(), Vec::new());
        assert_eq!(std::fs::read_to_string(&key).unwrap(), "new");
    }
}
