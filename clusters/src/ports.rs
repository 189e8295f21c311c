//! Free loopback ports.

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// The lowest port handed out when nothing says otherwise.
const PICK_FROM: u16 = 10000;

/// How long a port this process handed out is not handed out again: a component binds its
/// port only once it has started (Kueue after seconds, on a loaded machine tens of seconds),
/// and a cluster brought up beside it meanwhile would find that port free too (an own
/// cluster's Kueue exited "bind: address already in use" that way).
const HANDED_OUT_FOR: Duration = Duration::from_secs(600);

/// The ports this process handed out, and when.
static HANDED_OUT: LazyLock<Mutex<HashMap<u16, Instant>>> = LazyLock::new(Mutex::default);

/// Picks `n` distinct free ports on 127.0.0.1, each held bound until all are chosen so the
/// same port is never handed out twice. They come from below the kernel's ephemeral range,
/// so that no outgoing connection takes one as its source port between the pick and the
/// component's own bind (a kube-scheduler that lost its port that way left a cluster unready
/// after 60 s); where that range leaves no room, from the ephemeral range itself.
/// Nor is a port this process handed out in the last [`HANDED_OUT_FOR`] handed out again.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    handed_out.retain(|_, at| now.duration_since(*at) < HANDED_OUT_FOR);
    let mut listeners = Vec::with_capacity(n);
    let mut ports = Vec::with_capacity(n);
    let mut take = |listener: TcpListener, ports: &mut Vec<u16>| -> std::io::Result<()> {
        let port = listener.local_addr()?.port();
        if let std::collections::hash_map::Entry::Vacant(entry) = handed_out.entry(port) {
            entry.insert(now);
            ports.push(port);
            listeners.push(listener);
        }
        Ok(())
    };
    if let Some(range) = below_ephemeral(ephemeral_low()) {
        for _ in 0..n.saturating_mul(50) {
            if ports.len() == n {
                break;
            }
            if let Ok(l) = TcpListener::bind(("127.0.0.1", fastrand::u16(range.clone()))) {
                take(l, &mut ports)?;
            }
        }
    }
    for _ in 0..n.saturating_mul(50) {
        if ports.len() == n {
            break;
        }
        take(TcpListener::bind("127.0.0.1:0")?, &mut ports)?;
    }
    if ports.len() < n {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("found {} of {n} free ports on 127.0.0.1", ports.len()),
        ));
    }
    Ok(ports)
}

/// The first port of `net.ipv4.ip_local_port_range` (Linux's default 32768).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// The ports to pick from below an ephemeral range that starts at `low`; `None` when too
/// few are left above the well-known and registered services' usual ports.
fn below_ephemeral(low: u16) -> Option<std::ops::Range<u16>> {
    (low >= PICK_FROM.saturating_add(1000)).then_some(PICK_FROM..low)
}

/// Who listens on TCP `port` on this machine, for a message that says what to stop:
/// `pid 1234 (appwrapper-operator --kubeconfig ...)`, or the socket's owner uid when the
/// process cannot be seen (another user's, in another pid namespace).
pub fn holder(port: u16) -> Option<String> {
    use procfs::net::TcpState;
    let listening = procfs::net::tcp()
        .into_iter()
        .chain(procfs::net::tcp6())
        .flatten()
        .find(|e| e.state == TcpState::Listen && e.local_address.port() == port)?;
    let process = procfs::process::all_processes().ok()?.flatten().find(|p| {
        p.fd().is_ok_and(|mut fds| {
            fds.any(|fd| {
                fd.is_ok_and(|fd| fd.target == procfs::process::FDTarget::Socket(listening.inode))
            })
        })
    });
    Some(match process {
        Some(p) => {
            let cmdline = p.cmdline().unwrap_or_default().join(" ");
            format!("pid {} ({cmdline})", p.pid)
        }
        None => format!("a process of uid {} this user cannot see", listening.uid),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn ports_are_distinct_nonzero_and_below_the_ephemeral_range() {
        let ports = super::free_ports(6).unwrap();
        let mut unique = ports.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 6);
        assert!(ports.iter().all(|p| *p != 0));
        if let Some(range) = super::below_ephemeral(super::ephemeral_low()) {
            assert!(ports.iter().all(|p| range.contains(p)), "{ports:?}");
        }
    }

    #[test]
    fn a_port_handed_out_is_not_handed_out_again_while_its_component_may_still_be_starting() {
        let first = super::free_ports(300).unwrap();
        let second = super::free_ports(300).unwrap();
        let handed: std::collections::HashSet<u16> = first.iter().chain(&second).copied().collect();
        assert_eq!(handed.len(), 600);
    }

    #[rstest::rstest]
    #[case::linux_default(32768, Some(10000..32768))]
    #[case::wide_ephemeral_range(1024, None)]
    #[case::just_room(11000, Some(10000..11000))]
    #[case::too_little_room(10999, None)]
    fn ports_come_from_below_the_ephemeral_range(
        #[case] low: u16,
        #[case] expected: Option<std::ops::Range<u16>>,
    ) {
        assert_eq!(super::below_ephemeral(low), expected);
    }

    #[test]
    fn the_holder_of_a_port_is_this_process() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let holder = super::holder(port).unwrap();
        assert!(
            holder.starts_with(&format!("pid {} (", std::process::id())),
            "{holder}"
        );
        drop(listener);
        // A child that another test forks in the meantime holds a copy of the socket until it
        // execs (close-on-exec), so the port may stay held for a moment.
        assert!(crate::poll::blocking_until(
            std::time::Duration::from_secs(5),
            std::time::Duration::from_millis(10),
            || super::holder(port).is_none()
        ));
    }
}
