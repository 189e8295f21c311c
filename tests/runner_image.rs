//! The runner image as a maintainer's CI uses it, on a machine with no Docker engine:
//! `awconf image` writes it (no base image, no registry), containerd imports it, and the
//! GitHub Action's entry script (`ci/action/entrypoint.sh`) runs suites in containers of it,
//! which hold no Go and no Rust toolchain: the report lands in the workspace and the job summary
//! in `GITHUB_STEP_SUMMARY`. Once with our controller (embedded), once with our controller
//! binary mounted in from the workspace as a maintainer's `--controller external` command.
//! Needs root and containerd (`ci/setup` installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const IMAGE: &str = "awconf.local/runner:test";
const NAMESPACE: &str = "awconf-test";
/// Two scenarios of the phase graph, by their titles (`awconf run`'s name filters).
const SCENARIOS: &str = "Phases: Empty → Suspended\nPhases: Resuming → Running";

/// A containerd of this test's own: its root, state and socket under a temporary directory,
/// stopped (and its containers' shims with it) when dropped.
struct Containerd {
    dir: PathBuf,
    process: Child,
}

impl Containerd {
    fn start(dir: &Path) -> Containerd {
        let dir = dir.join("containerd");
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "version = 2\nroot = \"{0}/root\"\nstate = \"{0}/state\"\n\
                 disabled_plugins = [\"io.containerd.grpc.v1.cri\", \"io.containerd.tracing.processor.v1.otlp\"]\n\
                 [grpc]\n  address = \"{0}/containerd.sock\"\n[ttrpc]\n  address = \"{0}/containerd.sock.ttrpc\"\n\
                 [debug]\n  address = \"\"\n[metrics]\n  address = \"\"\n",
                dir.display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("containerd.log")).unwrap();
        let process = Command::new("containerd")
            .arg("--config")
            .arg(&config)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("containerd runs (apt-get install containerd runc, or ci/setup)");
        let containerd = Containerd { dir, process };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !containerd.ctr(&["version"]).status.success() {
            assert!(
                Instant::now() < deadline,
                "containerd did not answer within 30 s: {}",
                std::fs::read_to_string(containerd.dir.join("containerd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        containerd
    }

    fn address(&self) -> String {
        self.dir.join("containerd.sock").display().to_string()
    }

    fn ctr(&self, args: &[&str]) -> std::process::Output {
        Command::new("ctr")
            .arg("--address")
            .arg(self.address())
            .arg("--namespace")
            .arg(NAMESPACE)
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let tasks = String::from_utf8_lossy(&self.ctr(&["tasks", "ls", "-q"]).stdout).to_string();
        for task in tasks.split_whitespace() {
            self.ctr(&["tasks", "kill", "--signal", "SIGKILL", task]);
            self.ctr(&["tasks", "delete", "--force", task]);
        }
        let containers =
            String::from_utf8_lossy(&self.ctr(&["containers", "ls", "-q"]).stdout).to_string();
        for container in containers.split_whitespace() {
            self.ctr(&["containers", "delete", container]);
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
        // Snapshots are overlay mounts under the root while a container exists; none is left.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The entry script of `action.yml`, run as the action runs it, on containerd.
fn entrypoint(
    containerd: &Containerd,
    workspace: &Path,
    inputs: &[(&str, &str)],
) -> (Option<i32>, String) {
    let summary = workspace.join("step-summary.md");
    let script = workspace.join("entrypoint.sh");
    std::fs::write(&script, include_str!("../ci/action/entrypoint.sh")).unwrap();
    let mut command = Command::new("bash");
    command
        .arg(&script)
        .current_dir(workspace)
        .env("AWCONF_RUNTIME", "containerd")
        .env("CONTAINERD_ADDRESS", containerd.address())
        .env("CONTAINERD_NAMESPACE", NAMESPACE)
        .env("GITHUB_WORKSPACE", workspace)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("INPUT_IMAGE", IMAGE)
        .stdin(Stdio::null());
    for (name, value) in inputs {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    println!("{text}");
    (out.status.code(), text)
}

#[test]
fn the_action_runs_the_suite_in_a_container_of_the_runner_image() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("runner.tar");
    let controller = common::controller_binary::controller_binary();

    let started = Instant::now();
    let (code, text) = common::awconf([
        "image".as_ref(),
        "--output".as_ref(),
        archive.as_os_str(),
        "--tag".as_ref(),
        IMAGE.as_ref(),
        "--controller-bin".as_ref(),
        controller.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "awconf image: {text}");
    println!("runner image written in {:?}", started.elapsed());

    let containerd = Containerd::start(dir.path());
    let import = containerd.ctr(&["images", "import", archive.to_str().unwrap()]);
    assert!(
        import.status.success(),
        "ctr images import: {}",
        String::from_utf8_lossy(&import.stderr)
    );

    // Our controller in the container's own process (the default), two phase scenarios.
    let workspace = dir.path().join("embedded");
    std::fs::create_dir_all(&workspace).unwrap();
    let started = Instant::now();
    let (code, text) = entrypoint(&containerd, &workspace, &[("INPUT_EXTRA_ARGS", SCENARIOS)]);
    println!("embedded run in the container took {:?}", started.elapsed());
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("2 passed, 0 failed"), "{text}");
    assert!(workspace.join("awconf-report/junit.xml").is_file());
    let summary = std::fs::read_to_string(workspace.join("step-summary.md")).unwrap();
    assert!(summary.contains("passed"), "{summary}");

    // A maintainer's controller: a binary in the workspace, started inside the container by
    // a command line with the suite's settings.
    let workspace = dir.path().join("external");
    std::fs::create_dir_all(workspace.join("bin")).unwrap();
    std::fs::copy(&controller, workspace.join("bin/manager")).unwrap();
    let (code, text) = entrypoint(
        &containerd,
        &workspace,
        &[
            ("INPUT_CONTROLLER_BINARY", "bin/manager"),
            (
                "INPUT_CONTROLLER",
                "exec \"$CONTROLLER_BINARY\" --kubeconfig {kubeconfig} --config-file {config}",
            ),
            ("INPUT_TAGS", "not @webhook"),
            ("INPUT_EXTRA_ARGS", SCENARIOS),
        ],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("2 passed, 0 failed"),
        "both scenarios ran on the external controller: {text}"
    );
    assert!(workspace.join("awconf-report/junit.xml").is_file());

    // A failing run fails the action, and its report is still written.
    let workspace = dir.path().join("usage");
    std::fs::create_dir_all(&workspace).unwrap();
    let (code, text) = entrypoint(&containerd, &workspace, &[("INPUT_TAGS", "@no-such-tag")]);
    assert_eq!(
        code,
        Some(2),
        "a filter that selects nothing is a usage error: {text}"
    );
}
