//! The controller upgrades with work in flight (`features/controller_upgrade.feature`) on the
//! two paths a user takes: the reference operator replaced by ours (the drop-in path, to our
//! binary as a process), and a build of ours replaced by ours (a rollout, to the embedded
//! controller). One run after the other: each is `@serial` and waits out 30 s pauses, and the
//! reference holds its fixed webhook port. A run without `--controller-upgrade-from` skips them
//! with the reason.

mod common;

use common::awconf;
use std::ffi::OsStr;
use std::path::PathBuf;

/// Our controller's binary beside `awconf` (`cargo test --workspace` builds both).
fn our_binary() -> PathBuf {
    let binary =
        PathBuf::from(env!("CARGO_BIN_EXE_awconf")).with_file_name("appwrapper-controller");
    assert!(
        binary.is_file(),
        "{} not found: cargo build -p appwrapper-controller",
        binary.display()
    );
    binary
}

#[test]
fn the_reference_operator_and_a_build_of_ours_hand_over_to_ours_with_work_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let binary = our_binary();
    let paths: [(&str, Vec<&OsStr>); 2] = [
        (
            "the reference operator v1.2.2",
            vec![
                OsStr::new("--controller"),
                OsStr::new("process"),
                OsStr::new("--controller-upgrade-from"),
                OsStr::new("reference"),
            ],
        ),
        (
            "our binary",
            vec![OsStr::new("--controller-upgrade-from"), binary.as_os_str()],
        ),
    ];
    for (i, (from, flags)) in paths.into_iter().enumerate() {
        let report = dir.path().join(format!("path-{i}"));
        let mut args = vec![OsStr::new("run")];
        args.extend(flags);
        args.extend([
            OsStr::new("--report"),
            report.as_os_str(),
            OsStr::new("Controller upgrades"),
        ]);
        let (code, text) = awconf(args);
        assert_eq!(code, Some(0), "{from}: {text}");
        assert!(
            text.contains(&format!("the controller upgrade scenario runs {from}")),
            "{from}: {text}"
        );
        assert!(text.contains("2 passed, 0 failed"), "{from}: {text}");
    }
}

#[test]
fn without_a_controller_to_upgrade_from_the_scenarios_are_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = awconf([
        OsStr::new("run"),
        OsStr::new("--report"),
        dir.path().as_os_str(),
        OsStr::new("Controller upgrades"),
    ]);
    // A run that checked nothing does not pass.
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("each one selected was skipped"), "{text}");
    assert!(text.contains("0 passed, 0 failed, 2 skipped"), "{text}");
    assert!(
        text.contains("@controller-upgrade: no controller to upgrade from was named"),
        "{text}"
    );
}
