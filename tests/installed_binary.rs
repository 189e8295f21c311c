//! awconf as a user installs it: `cargo install --path . --root <tmp>` (debug profile, sharing
//! this workspace's build so it takes seconds), then run from an empty directory with no
//! source tree around, so nothing can be found through the checkout. The controller a run
//! starts as a process is the workspace's build, named by `--controller-bin`: installed on its
//! own, its dependencies would resolve fewer features and build again (two minutes of a fresh
//! machine's test command).

#[path = "common/controller_binary.rs"]
mod controller_binary;

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
    install_package(root, &workspace());
    root.join("bin").join("awconf")
}

fn install_package(root: &Path, package: &Path) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["install", "--debug", "--locked", "--offline", "--path"])
        .arg(package)
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
}

/// Installed once for all the tests of this file, into the build directory.
fn awconf() -> &'static Path {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| install(&target_dir().join("installed-awconf")))
}

/// Runs `awconf args` in `dir` with `env` set; returns its exit code and its output.
fn run_in(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let mut command = Command::new(awconf());
    command
        .args(args)
        .current_dir(dir)
        // Nothing of the checkout: no manifest directory, no inherited AWCONF_ settings.
        .env_remove("CARGO_MANIFEST_DIR");
    for (name, _) in std::env::vars() {
        if name.starts_with("AWCONF_") && name != "AWCONF_CACHE" {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied());
    let out = command.output().expect("awconf runs");
    // stderr (progress, errors) first, so that the last line is stdout's closing line.
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    (out.status.code().unwrap_or(-1), text)
}

/// A run's last line: `N passed, N failed, ...` (stdout comes after stderr in `run_in`).
fn closing_line(text: &str) -> &str {
    text.lines().last().unwrap_or_default()
}

#[test]
fn an_installed_awconf_runs_a_scenario_from_an_empty_directory() {
    let empty = tempfile::tempdir().unwrap();

    let (code, text) = run_in(empty.path(), &[], &["crd"]);
    assert!(
        code == 0 && text.contains("appwrappers.workload.codeflare.dev"),
        "{text}"
    );

    let (code, text) = run_in(empty.path(), &[], &["run", "Running → Succeeded"]);
    assert_eq!(code, 0, "{text}");
    let last = closing_line(&text);
    assert!(
        last.starts_with("1 passed, 0 failed, ") && last.ends_with(" not selected"),
        "{text}"
    );
    assert!(
        empty.path().join("awconf-report/junit.xml").is_file(),
        "the report goes to ./awconf-report"
    );
}

/// 1: a scenario failed. Its step fails at once, but the environment comes up first.
#[test]
fn a_failed_scenario_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("fails.feature"),
        "Feature: fails\n  Scenario: a status written for an AppWrapper never defined\n    \
         When the AppWrapper \"ghost\"'s status is written as:\n      \"\"\"\n      \
         phase: Running\n      \"\"\"\n",
    )
    .unwrap();
    let features = dir.path().display().to_string();
    let (code, text) = run_in(dir.path(), &[], &["run", "--only-features", &features]);
    assert_eq!(code, 1, "{text}");
    assert!(
        closing_line(&text).starts_with("0 passed, 1 failed"),
        "{text}"
    );
}

/// 2: usage, before anything starts; 3: the environment did not come up. Each setting is
/// its flag, else its AWCONF_ variable, else the default.
#[test]
fn exit_codes_and_the_flag_over_environment_rule() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path();
    let (code, text) = run_in(at, &[("AWCONF_TAGS", "@from-env")], &["run"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("no scenario matches the tags \"@from-env\""),
        "{text}"
    );

    let (code, text) = run_in(
        at,
        &[("AWCONF_TAGS", "@from-env")],
        &["run", "--tags", "@from-flag"],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("\"@from-flag\"") && !text.contains("@from-env"),
        "{text}"
    );

    let (code, text) = run_in(at, &[("AWCONF_CONCURRENCY", "many")], &["run"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--concurrency"), "{text}");
    let (code, text) = run_in(
        at,
        &[("AWCONF_CONCURRENCY", "many")],
        &["run", "--concurrency", "1", "no such scenario"],
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("no scenario matches the name filter"),
        "{text}"
    );

    let (code, text) = run_in(at, &[("AWCONF_CLUSTER", "minikube")], &["run"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("[possible values: local, existing, kind, k3d, k3s]"),
        "{text}"
    );

    let missing = at.join("missing-kubeconfig");
    let (code, text) = run_in(
        at,
        &[("KUBECONFIG", missing.to_str().unwrap())],
        &[
            "run",
            "--cluster",
            "existing",
            "--controller",
            "installed",
            "Running → Succeeded",
        ],
    );
    assert_eq!(code, 3, "{text}");
    assert!(
        text.contains(&format!("kubeconfig KUBECONFIG ({})", missing.display())),
        "{text}"
    );

    let (code, text) = run_in(at, &[], &["run", "--help"]);
    assert_eq!(code, 0, "{text}");
    for line in [
        "[env: AWCONF_CLUSTER=]",
        "  3  the environment failed",
        "[default: awconf-report]",
    ] {
        assert!(text.contains(line), "--help lacks {line:?}:\n{text}");
    }
}

/// Two runs on one machine at once, one with our controller as a child process: each picks
/// its own ports and directories, so both end as they would alone.
#[test]
fn two_runs_at_once_end_as_they_would_alone() {
    let controller = controller_binary::controller_binary();
    let controller = controller.to_str().unwrap().to_string();
    let runs: Vec<_> = [
        vec!["run", "Running → Succeeded"],
        vec![
            "run",
            "--controller",
            "process",
            "--controller-bin",
            &controller,
            "Running → Succeeded",
        ],
    ]
    .into_iter()
    .map(|args| {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        std::thread::spawn(move || {
            let dir = tempfile::tempdir().unwrap();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_in(dir.path(), &[], &args)
        })
    })
    .collect();
    for run in runs {
        let (code, text) = run.join().unwrap();
        assert_eq!(code, 0, "{text}");
        assert!(
            closing_line(&text).starts_with("1 passed, 0 failed"),
            "{text}"
        );
    }
}

/// `awconf matrix` over two Kueue releases: a scenario tagged `@kueue>=0.19` runs on v0.19.2
/// and is skipped with its rule on v0.18.4; the table, the matrix page and the difference
/// say so, and each pair has its report directory.
#[test]
fn a_matrix_runs_each_pair_and_skips_what_a_version_does_not_support() {
    let dir = tempfile::tempdir().unwrap();
    let features = dir.path().join("features");
    std::fs::create_dir(&features).unwrap();
    let runs = "    Given an AppWrapper \"a\" wrapping a Pod\n    \
                When it is submitted to the LocalQueue\n    \
                Then it reaches phase Running within 60 seconds\n";
    std::fs::write(
        features.join("versions.feature"),
        format!(
            "Feature: versions\n  Scenario: on every Kueue\n{runs}\n  @kueue>=0.19\n  \
             Scenario: on Kueue 0.19 and newer\n{runs}"
        ),
    )
    .unwrap();
    let (code, text) = run_in(
        dir.path(),
        &[],
        &[
            "matrix",
            "--kueue",
            "v0.18.4,v0.19.2",
            "--kubernetes",
            "v1.36.3",
            "--only-features",
            &features.display().to_string(),
        ],
    );
    assert_eq!(code, 0, "{text}");
    let row = |pair: &str| {
        text.lines()
            .find(|l| l.starts_with(pair) && !l.contains(':'))
            .map(|l| l.split_whitespace().rev().take(3).collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no row for {pair}:\n{text}"))
    };
    // (skipped, failed, passed): the row's last three numbers, backwards.
    assert_eq!(row("Kueue v0.18.4 · Kubernetes v1.36.3"), ["1", "0", "1"]);
    assert_eq!(row("Kueue v0.19.2 · Kubernetes v1.36.3"), ["0", "0", "2"]);
    let difference = "≠ versions: on Kueue 0.19 and newer: skipped on Kueue v0.18.4 · Kubernetes \
                      v1.36.3 (@kueue>=0.19: needs Kueue >=0.19; this run's is v0.18.4); passed \
                      on Kueue v0.19.2 · Kubernetes v1.36.3";
    assert!(text.contains(difference), "{text}");
    let matrix = dir.path().join("awconf-matrix");
    for pair in [
        "kueue-v0.18.4_kubernetes-v1.36.3",
        "kueue-v0.19.2_kubernetes-v1.36.3",
    ] {
        assert!(matrix.join(pair).join("results.json").is_file(), "{pair}");
        assert!(matrix.join(pair).join("run.log").is_file(), "{pair}");
    }
    let page = std::fs::read_to_string(matrix.join("index.html")).unwrap();
    assert!(page.contains("<h2>Differences</h2>"), "{page}");
    assert!(page.contains("needs Kueue &gt;=0.19"), "{page}");
}
