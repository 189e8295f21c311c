//! This machine's own, non-loopback address: what an EndpointSlice may point at (the API
//! server refuses loopback endpoints) and what a node advertises.

use std::net::Ipv4Addr;

/// The first IPv4 address of an interface that is up, not loopback and not link-local.
pub fn address() -> std::io::Result<Ipv4Addr> {
    interface_addresses()?
        .into_iter()
        .find(|ip| usable(*ip))
        .ok_or_else(|| {
            std::io::Error::other(
                "this machine has no non-loopback IPv4 address (an interface that is up is needed)",
            )
        })
}

fn usable(ip: Ipv4Addr) -> bool {
    !ip.is_loopback() && !ip.is_link_local() && !ip.is_unspecified() && !ip.is_multicast()
}

/// The IPv4 addresses of the interfaces that are operationally up (carrier and all).
fn interface_addresses() -> std::io::Result<Vec<Ipv4Addr>> {
    Ok(if_addrs::get_if_addrs()?
        .into_iter()
        .filter(|interface| interface.is_oper_up())
        .filter_map(|interface| match interface.ip() {
            std::net::IpAddr::V4(ip) => Some(ip),
            std::net::IpAddr::V6(_) => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_link_local_are_not_usable() {
        assert!(!usable(Ipv4Addr::LOCALHOST));
        assert!(!usable(Ipv4Addr::new(169, 254, 1, 1)));
        assert!(usable(Ipv4Addr::new(192, 0, 2, 2)));
    }

    #[test]
    fn the_loopback_interface_is_listed_but_never_chosen() {
        let all = interface_addresses().unwrap();
        assert!(all.contains(&Ipv4Addr::LOCALHOST));
        if let Ok(ip) = address() {
            assert!(!ip.is_loopback());
        }
    }
}
