//! How many more local clusters this user's inotify instances allow. Each API server, Kueue and
//! controller-runtime manager watches its certificate files, and a user may hold
//! `fs.inotify.max_user_instances` instances (128 by default): past it, Kueue exits with
//! "couldn't initialize inotify: too many open files", the failure kind documents as a known
//! issue.

/// Instances one local cluster holds: measured 10 (the API server 6, Kueue 3, the operator 1),
/// with room for one more manager.
pub const PER_CLUSTER: u64 = 12;

/// The limit and the instances this user's processes hold now, when /proc tells.
pub fn usage() -> Option<(u64, u64)> {
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let uid = own_uid();
    let held = procfs::process::all_processes()
        .ok()?
        .flatten()
        .filter(|p| p.uid().is_ok_and(|u| u == uid))
        .filter_map(|p| p.fd().ok())
        .flat_map(|fds| fds.flatten())
        .filter(|fd| {
            matches!(&fd.target, procfs::process::FDTarget::AnonInode(kind) if kind == "inotify")
        })
        .count() as u64;
    Some((limit, held))
}

fn own_uid() -> u32 {
    procfs::process::Process::myself()
        .and_then(|p| p.uid())
        .unwrap_or(0)
}

/// How many clusters fit beside what is held now, at most `wanted`, at least one.
pub fn clusters_that_fit(wanted: usize, limit: u64, held: u64) -> usize {
    let room = limit.saturating_sub(held) / PER_CLUSTER;
    (room as usize).clamp(1, wanted.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[rstest::rstest]
    #[case::default_limit_idle(8, 128, 0, 8)]
    #[case::default_limit_with_the_runs_cluster(8, 128, 12, 8)]
    #[case::default_limit_busy(8, 128, 60, 5)]
    #[case::raised_limit(8, 512, 12, 8)]
    #[case::exhausted(8, 128, 128, 1)]
    fn clusters_fit_in_the_instances_left(
        #[case] wanted: usize,
        #[case] limit: u64,
        #[case] held: u64,
        #[case] fit: usize,
    ) {
        assert_eq!(clusters_that_fit(wanted, limit, held), fit);
    }

    #[test]
    fn this_machine_tells_its_limit() {
        if let Some((limit, held)) = usage() {
            assert!(limit > 0 && held <= limit, "{limit} {held}");
        }
    }
}
