//! Headless Chromium on a page of the disk, for the tests that read the report as a reviewer
//! would (shared by path with the workspace's own tests).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const INSTALL: &str = "apt-get install -y chromium";

pub fn chromium() -> PathBuf {
    let candidates = std::env::var_os("AWCONF_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["chromium", "chromium-browser"].map(PathBuf::from));
    for candidate in candidates {
        if Command::new(&candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return candidate;
        }
    }
    panic!(
        "headless Chromium is needed to check the report in a browser and was not found \
         (chromium, chromium-browser or $AWCONF_CHROMIUM); install it with: {INSTALL}"
    );
}

/// Chromium on a page of the disk with the network cut off; `extra` says what to produce.
pub fn browse(chromium: &Path, page: &Path, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1280,1500",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "running {}: {e}; install it with: {INSTALL}",
                chromium.display()
            )
        });
    assert!(
        output.status.success(),
        "chromium on {} failed: {}",
        page.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "chromium {} {}: {:.1}s",
        extra.join(" "),
        page.display(),
        started.elapsed().as_secs_f64()
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn dom(chromium: &Path, page: &Path) -> String {
    browse(chromium, page, &["--dump-dom".to_string()])
}
