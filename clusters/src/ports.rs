//! Free loopback ports.

use std::net::TcpListener;

/// Picks `n` distinct free ports on 127.0.0.1 by binding port 0; the listeners are held until all
/// are chosen so the same port is never handed out twice.
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let listeners: Vec<_> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
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
    fn ports_are_distinct_and_nonzero() {
        let ports = super::free_ports(6).unwrap();
        let mut unique = ports.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 6);
        assert!(ports.iter().all(|p| *p != 0));
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
        assert_eq!(super::holder(port), None);
    }
}
