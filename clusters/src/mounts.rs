//! What is mounted under a directory, from this process's mount table: a directory with a
//! mount under it must not be removed, since deleting through a mount deletes what it shows.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// Mount points at or under `dir`, deepest first, from this process's mount table.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found: Vec<PathBuf> = parse_mountinfo(&table)
        .into_iter()
        .filter(|m| m.starts_with(dir))
        .collect();
    found.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
    found
}

/// The mount points (fifth field) of /proc/self/mountinfo, octal escapes decoded to bytes
/// (procfs leaves them escaped, so a mount under a path with a space would go unseen).
fn parse_mountinfo(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape(field)))
        .collect()
}

fn unescape(field: &str) -> OsString {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u8::from_str_radix(digits, 8).ok());
        if bytes[i] == b'\\'
            && let Some(code) = octal
        {
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_from_the_fifth_field_with_escapes() {
        let table = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                     40 22 8:1 /w/node/kubelet /w/node/kubelet rw - ext4 /dev/vda rw\n\
                     41 40 0:50 / /w/node/kubelet/pods/a\\040b rw - tmpfs tmpfs rw\n";
        assert_eq!(
            parse_mountinfo(table),
            vec![
                PathBuf::from("/"),
                PathBuf::from("/w/node/kubelet"),
                PathBuf::from("/w/node/kubelet/pods/a b"),
            ]
        );
    }
}
