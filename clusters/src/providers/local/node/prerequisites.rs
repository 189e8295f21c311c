//! What a real node needs from this machine, checked before anything starts.

use std::path::{Path, PathBuf};

use super::config::{CNI_BIN_DIR, NODE_PATH};
use crate::images::BUSYBOX;

/// The one command that installs every host package a real node uses (Debian 12).
pub const INSTALL: &str = "apt-get install -y containerd runc containernetworking-plugins iptables iproute2 gcc libc6-dev busybox-static";

/// A file the node needs and the Debian package that ships it.
struct Needed {
    what: &'static str,
    package: &'static str,
}

const PROGRAMS: &[Needed] = &[
    Needed {
        what: "containerd",
        package: "containerd",
    },
    Needed {
        what: "containerd-shim-runc-v2",
        package: "containerd",
    },
    Needed {
        what: "ctr",
        package: "containerd",
    },
    Needed {
        what: "runc",
        package: "runc",
    },
    Needed {
        what: "iptables",
        package: "iptables",
    },
    Needed {
        what: "ip",
        package: "iproute2",
    },
    Needed {
        what: "gcc",
        package: "gcc",
    },
];

const CNI_PLUGINS: &[&str] = &["bridge", "host-local", "loopback", "portmap"];

/// Resolves `program` on the node's PATH.
pub fn find_program(program: &str) -> Option<PathBuf> {
    NODE_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.is_file())
}

/// Fails with every missing piece and the command that installs them.
pub fn check() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if !rustix::process::geteuid().is_root() {
        return Err(
            "a real node runs containerd and the kubelet, which need root; run as root (or leave out --real-nodes)"
                .into(),
        );
    }
    let mut missing: Vec<String> = PROGRAMS
        .iter()
        .filter(|n| find_program(n.what).is_none())
        .map(|n| format!("{} (package {})", n.what, n.package))
        .collect();
    missing.extend(
        CNI_PLUGINS
            .iter()
            .filter(|plugin| !Path::new(CNI_BIN_DIR).join(plugin).is_file())
            .map(|plugin| format!("{CNI_BIN_DIR}/{plugin} (package containernetworking-plugins)")),
    );
    if !Path::new(BUSYBOX).is_file() {
        missing.push(format!("{BUSYBOX} (package busybox-static)"));
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "a real node needs host packages that are missing: {}. Install them with: {INSTALL}",
        missing.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_command_names_every_package_checked() {
        for needed in PROGRAMS {
            assert!(INSTALL.contains(needed.package), "{}", needed.package);
        }
        for package in ["containernetworking-plugins", "busybox-static"] {
            assert!(INSTALL.contains(package));
        }
    }

    #[test]
    fn ci_installs_the_same_packages() {
        let ci = include_str!("../../../../../ci/setup");
        let packages = INSTALL.trim_start_matches("apt-get install -y ");
        assert!(
            ci.contains(&format!("REAL_NODE_PACKAGES=\"{packages}\"")),
            "ci/setup must install: {packages}"
        );
    }

    #[test]
    fn programs_are_found_on_the_node_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("no-such-program-awconf").is_none());
    }
}
