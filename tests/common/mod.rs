//! What the integration tests that run the built `awconf` share.

// Used by the test binaries that run our controller as a maintainer's; the others leave it.
#[allow(dead_code)]
pub mod controller_binary;

use std::ffi::OsStr;
use std::process::Command;

/// Runs the built `awconf` with `args`, free of the caller's controller and Kueue choices
/// (`AWCONF_CONTROLLER*`, `AWCONF_KUEUE_VERSION`); returns its exit code and its output,
/// printed too.
pub fn awconf<I, S>(args: I) -> (Option<i32>, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = Command::new(env!("CARGO_BIN_EXE_awconf"))
        .args(args)
        .env_remove("AWCONF_CONTROLLER")
        .env_remove("AWCONF_CONTROLLER_BIN")
        .env_remove("AWCONF_CONTROLLER_UPGRADE_FROM")
        .env_remove("AWCONF_KUEUE_VERSION")
        .output()
        .expect("awconf runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    println!("{text}");
    (out.status.code(), text)
}
