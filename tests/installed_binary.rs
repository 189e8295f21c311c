//! awconf as a user installs it: `cargo install --path . --root <tmp>` (debug profile, sharing
//! this workspace's build so it takes seconds), then run from an empty directory with no
//! source tree around, so nothing can be found through the checkout.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The build directory this test runs from (`target/` or `$CARGO_TARGET_DIR`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

fn install(root: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["install", "--debug", "--locked", "--offline", "--path"])
        .arg(workspace())
        .arg("--root")
        .arg(root)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo install failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    root.join("bin").join("awconf")
}

fn run_in(dir: &Path, binary: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(binary)
        .args(args)
        .current_dir(dir)
        // Nothing of the checkout: no manifest directory, no inherited AWCONF_ settings.
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("AWCONF_FEATURES")
        .env_remove("AWCONF_REPORT_DIR")
        .output()
        .expect("awconf runs");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn an_installed_awconf_runs_a_scenario_from_an_empty_directory() {
    let root = tempfile::tempdir().unwrap();
    let binary = install(root.path());
    let empty = tempfile::tempdir().unwrap();

    let (ok, text) = run_in(empty.path(), &binary, &["crd"]);
    assert!(
        ok && text.contains("appwrappers.workload.codeflare.dev"),
        "{text}"
    );

    let (ok, text) = run_in(empty.path(), &binary, &["run", "Running → Succeeded"]);
    assert!(ok, "{text}");
    let last = text.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("1 passed, 0 failed, ") && last.ends_with(" not selected"),
        "{text}"
    );
    assert!(
        empty
            .path()
            .join("target/awconf-report/junit.xml")
            .is_file(),
        "the report goes under the working directory"
    );
}
