//! Our controller's binary, for the tests that hand it to awconf as a maintainer's controller.

use std::path::PathBuf;
use std::process::Command;

/// `appwrapper-controller` beside the `awconf` under test (`cargo build` puts them together).
pub fn controller_binary() -> PathBuf {
    let awconf = PathBuf::from(env!("CARGO_BIN_EXE_awconf"));
    let controller = awconf.with_file_name("appwrapper-controller");
    if !controller.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "appwrapper-controller"])
            .status()
            .unwrap();
        assert!(status.success(), "cargo build -p appwrapper-controller");
    }
    controller
}
