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
}
