//! Network namespaces of this machine, for a program that listens on a port nobody may change
//! (the reference operator's webhook port) and must run more than once at a time: each
//! namespace has ports of its own and reaches the host over a pair of virtual Ethernet links,
//! a /30 of `10.231.0.0/16` between them.
//!
//! Needs root and `ip` (iproute2). A namespace is named `awconf-<pid>-<index>`, so that those a
//! killed run left behind are found by the next ([`remove_stale`]).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error(
        "a network namespace needs root (this is uid {0}); run as root, or without the \
         scenarios that need one"
    )]
    NotRoot(u32),
    #[error("running `ip` (iproute2; install it with `apt-get install iproute2`): {0}")]
    Spawn(std::io::Error),
    #[error("`ip {args}` failed: {stderr}")]
    Command { args: String, stderr: String },
    #[error("every /30 of 10.231.0.0/16 is in use by a network namespace of awconf")]
    Exhausted,
}

const PREFIX: &str = "awconf-";
/// /30 subnets in `10.231.0.0/16`.
const SUBNETS: u32 = 1 << 14;

/// A network namespace with a link to the host; deleted when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
    index: u32,
}

impl Netns {
    /// Whether this machine can make one: root and iproute2.
    pub fn available() -> Result<(), NetnsError> {
        let uid = rustix::process::getuid().as_raw();
        if uid != 0 {
            return Err(NetnsError::NotRoot(uid));
        }
        ip(&["-V"]).map(|_| ())
    }

    /// A namespace with its end of the link up at [`Netns::address`], the host's end at
    /// [`Netns::host_address`]. Takes the first index whose host link name is free: creating
    /// the link is what claims it, so two runs never share a subnet.
    pub fn create() -> Result<Self, NetnsError> {
        Self::available()?;
        let pid = std::process::id();
        for index in 0..SUBNETS {
            if Path::new("/sys/class/net").join(host_link(index)).exists() {
                continue;
            }
            let name = format!("{PREFIX}{pid}-{index}");
            ip(&["netns", "add", &name])?;
            let netns = Netns { name, index };
            let link = [
                "link",
                "add",
                &host_link(index),
                "type",
                "veth",
                "peer",
                "name",
                &inner_link(index),
                "netns",
                &netns.name,
            ];
            match ip(&link) {
                Ok(_) => {
                    netns.configure()?;
                    return Ok(netns);
                }
                // Another run claimed this index between the look and the add.
                Err(NetnsError::Command { stderr, .. }) if stderr.contains("exists") => continue,
                Err(e) => return Err(e),
            }
        }
        Err(NetnsError::Exhausted)
    }

    fn configure(&self) -> Result<(), NetnsError> {
        let host = format!("{}/30", self.host_address());
        let inside = format!("{}/30", self.address());
        let (host_link, inner_link) = (host_link(self.index), inner_link(self.index));
        ip(&["addr", "add", &host, "dev", &host_link])?;
        ip(&["link", "set", &host_link, "up"])?;
        let n = self.name.as_str();
        ip(&["-n", n, "addr", "add", &inside, "dev", &inner_link])?;
        ip(&["-n", n, "link", "set", &inner_link, "up"])?;
        ip(&["-n", n, "link", "set", "lo", "up"])?;
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The host's end of the link: where a program inside reaches this machine.
    pub fn host_address(&self) -> Ipv4Addr {
        subnet(self.index, 1)
    }

    /// The namespace's end of the link: where this machine reaches a program inside.
    pub fn address(&self) -> Ipv4Addr {
        subnet(self.index, 2)
    }

    /// How to run programs inside, with each `(source, target)` of `binds` mounted over its
    /// target for them alone.
    pub fn inside(&self, binds: Vec<(PathBuf, PathBuf)>) -> Inside {
        Inside {
            name: self.name.clone(),
            binds,
        }
    }
}

/// Programs run inside a [`Netns`], each in a mount namespace of its own (`ip netns exec`
/// makes one, which sees the host's mounts but shows the host none of its own).
#[derive(Clone, Debug)]
pub struct Inside {
    name: String,
    binds: Vec<(PathBuf, PathBuf)>,
}

impl Inside {
    /// The program and arguments that run `program` inside, its mounts in place first.
    pub fn command(&self, program: &Path, args: &[String]) -> (PathBuf, Vec<String>) {
        wrapped(&self.name, program, args, &self.binds)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            tracing::warn!("deleting network namespace {}: {e}", self.name);
        }
    }
}

fn wrapped(
    name: &str,
    program: &Path,
    args: &[String],
    binds: &[(PathBuf, PathBuf)],
) -> (PathBuf, Vec<String>) {
    let mut script = String::new();
    let mut words = Vec::new();
    for (i, (source, target)) in binds.iter().enumerate() {
        script.push_str(&format!(
            "mount --bind \"${}\" \"${}\" && ",
            2 * i + 1,
            2 * i + 2
        ));
        words.push(source.display().to_string());
        words.push(target.display().to_string());
    }
    script.push_str(&format!("shift {} && exec \"$@\"", words.len()));
    let mut command: Vec<String> = ["netns", "exec", name, "sh", "-c", &script, "sh"]
        .into_iter()
        .map(String::from)
        .collect();
    command.extend(words);
    command.push(program.display().to_string());
    command.extend(args.iter().cloned());
    (PathBuf::from("ip"), command)
}

/// Deletes the namespaces of runs that are gone (their pid no longer exists); returns their
/// names.
pub fn remove_stale() -> Vec<String> {
    let Ok(listing) = ip(&["netns", "list"]) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for name in stale(&listing, |pid| {
        Path::new("/proc").join(pid.to_string()).exists()
    }) {
        if ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// Names in `ip netns list` output of awconf's namespaces whose run is not `alive`.
fn stale(listing: &str, alive: impl Fn(u32) -> bool) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| {
            name.strip_prefix(PREFIX)
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse().ok())
                .is_some_and(|pid| !alive(pid))
        })
        .map(String::from)
        .collect()
}

fn subnet(index: u32, host: u32) -> Ipv4Addr {
    let base = u32::from(Ipv4Addr::new(10, 231, 0, 0));
    Ipv4Addr::from(base + index * 4 + host)
}

fn host_link(index: u32) -> String {
    format!("awconf{index}h")
}

fn inner_link(index: u32) -> String {
    format!("awconf{index}n")
}

fn ip(args: &[&str]) -> Result<String, NetnsError> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(NetnsError::Spawn)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(NetnsError::Command {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_index_has_a_slash_30_of_its_own() {
        assert_eq!(subnet(0, 1), Ipv4Addr::new(10, 231, 0, 1));
        assert_eq!(subnet(0, 2), Ipv4Addr::new(10, 231, 0, 2));
        assert_eq!(subnet(65, 2), Ipv4Addr::new(10, 231, 1, 6));
        assert_eq!(subnet(SUBNETS - 1, 2), Ipv4Addr::new(10, 231, 255, 254));
        // Link names fit the kernel's 15 characters.
        assert!(host_link(SUBNETS - 1).len() <= 15);
    }

    #[test]
    fn the_program_runs_inside_with_its_mounts() {
        let (program, args) = wrapped(
            "awconf-1-0",
            Path::new("/bin/op"),
            &["--kubeconfig".into(), "/k".into()],
            &[(PathBuf::from("/own/certs"), PathBuf::from("/tmp/certs"))],
        );
        assert_eq!(program, PathBuf::from("ip"));
        assert_eq!(
            args,
            [
                "netns",
                "exec",
                "awconf-1-0",
                "sh",
                "-c",
                "mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"",
                "sh",
                "/own/certs",
                "/tmp/certs",
                "/bin/op",
                "--kubeconfig",
                "/k"
            ]
        );
    }

    #[test]
    fn only_namespaces_of_dead_runs_are_stale() {
        let listing = "awconf-10-0 (id: 3)\nawconf-20-1\ncni-1234\nawconf-x-1\n";
        assert_eq!(stale(listing, |pid| pid == 20), ["awconf-10-0"]);
    }
}
