//! Free loopback ports.

use std::net::TcpListener;

/// The lowest port handed out when nothing says otherwise.
const PICK_FROM: u16 = 10000;

/// Picks `n` distinct free ports on 127.0.0.1, each held bound until all are chosen so the
/// same port is never handed out twice. They come from below the kernel's ephemeral range,
/// so that no outgoing connection takes one as its source port between the pick and the
/// component's own bind (a kube-scheduler that lost its port that way left a cluster unready
/// after 60 s); where that range leaves no room, from the ephemeral range itself.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let mut listeners = Vec::with_capacity(n);
    if let Some(range) = below_ephemeral(ephemeral_low()) {
        for _ in 0..n.saturating_mul(50) {
            if listeners.len() == n {
                break;
            }
            if let Ok(l) = TcpListener::bind(("127.0.0.1", fastrand::u16(range.clone()))) {
                listeners.push(l);
            }
        }
    }
    while listeners.len() < n {
        listeners.push(TcpListener::bind("127.0.0.1:0")?);
    }
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
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
