//! This machine's own, non-loopback address: what an EndpointSlice may point at (the API
//! server refuses loopback endpoints) and what a node advertises.

use std::net::Ipv4Addr;

/// The first IPv4 address of an interface that is up and not loopback.
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

fn interface_addresses() -> std::io::Result<Vec<Ipv4Addr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list that we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut cursor = head;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a node of the list getifaddrs returned and is not freed yet.
        let entry = unsafe { &*cursor };
        let up = entry.ifa_flags & (libc::IFF_UP as u32) != 0;
        if up && !entry.ifa_addr.is_null() {
            // SAFETY: ifa_addr points at a sockaddr whose family says how to read it.
            let family = unsafe { (*entry.ifa_addr).sa_family };
            if i32::from(family) == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
                found.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
        }
        cursor = entry.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(found)
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
