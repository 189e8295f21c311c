//! `awconf report summary DIR` as a CI step runs it: the built binary, a report directory's
//! results.json in, Markdown for the job summary out.

use std::process::Command;

fn awconf(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_awconf"))
        .args(args)
        .output()
        .expect("awconf runs")
}

#[test]
fn the_summary_of_a_report_directory_is_markdown_with_each_failure() {
    let dir = tempfile::tempdir().unwrap();
    let results = serde_json::json!({
        "format": 1,
        "context": "controller under test: external; Kueue v0.19.2",
        "closing_line": "1 passed, 1 failed",
        "seconds": 12.0,
        "scenarios": [
            {"feature": "Phases", "scenario": "Admitted", "status": "passed", "seconds": 3.0},
            {"feature": "Fault tolerance", "scenario": "Reset", "status": "failed",
             "seconds": 9.0, "page": "scenarios/t-1/index.html",
             "reason": "Step panicked. Captured output: timed out after 5s waiting for a",
             "failure": "Step panicked. Captured output: timed out after 5s waiting for a\n\
                         mismatches:\n  - .status.phase: expected \"Resetting\", got \"Running\""}
        ]
    });
    std::fs::write(dir.path().join("results.json"), results.to_string()).unwrap();
    let out = awconf(&[
        "report".as_ref(),
        "summary".as_ref(),
        "--title".as_ref(),
        "Conformance (embedded)".as_ref(),
        dir.path().as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("## Conformance (embedded)\n\n❌ **1 passed, 1 failed** in 12 s\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| Fault tolerance | ❌ failed | 0 | 1 | 0 |\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "| Fault tolerance | Reset | timed out after 5s waiting for a: .status.phase: \
             expected \"Resetting\", got \"Running\" |\n"
        ),
        "{stdout}"
    );

    // A directory without results (the run stopped before writing them) is a usage error.
    let empty = tempfile::tempdir().unwrap();
    let out = awconf(&[
        "report".as_ref(),
        "summary".as_ref(),
        empty.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("results.json"), "{stderr}");
}
