//! awconf's GitHub Action (`action.yml`) and its entry script (`ci/action/entrypoint.sh`)
//! against this CLI: every input the action declares reaches the script or a step of its own,
//! and every `awconf run` command line the script makes, from the inputs of a table and from
//! each workflow that uses the action, is one `awconf run` accepts, with the meaning meant.
//!
//! The script runs for real under bash, with fakes of `docker` and `ctr` first on its PATH
//! that record their arguments; a test with the real image and containerd is elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use conformance_steps::options::ExternalCommand;
use conformance_steps::{ClusterChoice, ControllerMode, SuiteOptions};
use serde_json::Value;

use super::RunArgs;
use crate::cli::args_alone::parse;

const ACTION: &str = "action.yml";
const SCRIPT: &str = "ci/action/entrypoint.sh";
/// The script itself, compiled in: the tests read no source tree at run time.
const SCRIPT_TEXT: &str = include_str!("../../../ci/action/entrypoint.sh");
const MOUNT: &str = "/github/workspace";
const IMAGE: &str = "awconf.local/runner:test";

fn options(args: &[String]) -> anyhow::Result<SuiteOptions> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.split_first() {
        Some((&"run", flags)) => parse::<RunArgs>(flags)?.options(SuiteOptions::default()),
        _ => anyhow::bail!("not `awconf run`: {words:?}"),
    }
}

/// The action and the workflows, compiled in: the tests read no source tree at run time.
const ACTION_TEXT: &str = include_str!("../../../action.yml");
pub(super) const WORKFLOWS: [(&str, &str); 4] = [
    (
        ".github/workflows/release.yml",
        include_str!("../../../.github/workflows/release.yml"),
    ),
    (
        "ci/github-actions.yml",
        include_str!("../../../ci/github-actions.yml"),
    ),
    (
        "ci/providers.yml",
        include_str!("../../../ci/providers.yml"),
    ),
    (
        "ci/version-matrix.yml",
        include_str!("../../../ci/version-matrix.yml"),
    ),
];

fn yaml(path: &str, text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `INPUT_CONTROLLER_BINARY` for `controller-binary`.
fn variable(input: &str) -> String {
    format!("INPUT_{}", input.to_uppercase().replace('-', "_"))
}

/// The action's inputs, and the step that runs the entry script.
fn action() -> (BTreeMap<String, Value>, Value, Vec<Value>) {
    let action = yml_object(yaml(ACTION, ACTION_TEXT));
    let inputs: BTreeMap<String, Value> = action["inputs"]
        .as_object()
        .expect("action.yml has inputs")
        .clone()
        .into_iter()
        .collect();
    assert_eq!(action["runs"]["using"], "composite");
    let steps = action["runs"]["steps"].as_array().unwrap().clone();
    let script_steps: Vec<&Value> = steps
        .iter()
        .filter(|s| text(&s["run"]).contains(SCRIPT))
        .collect();
    assert_eq!(script_steps.len(), 1, "one step runs {SCRIPT}");
    (inputs, script_steps[0].clone(), steps)
}

fn yml_object(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not a mapping: {other}"),
    }
}

#[test]
fn every_input_of_the_action_reaches_the_entry_script_or_a_step() {
    let (inputs, step, steps) = action();
    let script = SCRIPT_TEXT;
    let env = step["env"].as_object().expect("the script's step has env");
    // Inputs are passed as environment variables, never written into a script
    // (zizmor's template-injection audit checks the same).
    for s in &steps {
        assert!(
            !text(&s["run"]).contains("${{"),
            "an expression in run: {s}"
        );
    }
    let mut in_steps = 0;
    for (name, input) in &inputs {
        assert!(
            !text(&input["description"]).is_empty(),
            "input {name} has no description"
        );
        let expression = format!("${{{{ inputs.{name} }}}}");
        match env.get(&variable(name)) {
            Some(value) => {
                assert_eq!(text(value), expression, "{}", variable(name));
                assert!(
                    script.contains(&variable(name)),
                    "{SCRIPT} never reads {} (input {name})",
                    variable(name)
                );
            }
            None => {
                let used = steps.iter().any(|s| {
                    s["with"]
                        .as_object()
                        .is_some_and(|with| with.values().any(|v| text(v).contains(&expression)))
                });
                assert!(used, "input {name} is used by no step of the action");
                in_steps += 1;
            }
        }
    }
    assert_eq!(in_steps, 1, "only artifact-name is for another step");
    // And every INPUT_ variable the script reads is one the action sets.
    let mut read: Vec<&str> = script
        .match_indices("INPUT_")
        .map(|(i, _)| {
            let rest = &script[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    read.sort();
    read.dedup();
    for variable in read {
        assert!(
            env.contains_key(variable),
            "{SCRIPT} reads {variable}, which action.yml never sets"
        );
    }
    // The default image is the placeholder a release fills in, and nothing else.
    assert!(env.contains_key("AWCONF_DEFAULT_IMAGE"));
}

/// A workspace and fakes of `docker` and `ctr` that record each call (its arguments,
/// NUL-separated, in a file of its own), print a summary for `report summary`, list IMAGE for
/// `ctr images list`, and exit with $FAKE_STATUS for `awconf run`.
struct Stand {
    dir: tempfile::TempDir,
}

const FAKE: &str = r#"#!/bin/sh
n=$(ls "$FAKE_CALLS" | wc -l)
for a in "$@"; do printf '%s\0' "$a"; done > "$FAKE_CALLS/$n"
case " $* " in
*" images list "*) echo "$FAKE_IMAGE" ;;
*" report summary "*) echo "the summary of $FAKE_IMAGE" ;;
*" --report "*) exit "${FAKE_STATUS:-0}" ;;
esac
"#;

/// What one run of the entry script did.
#[derive(Debug)]
struct ScriptRun {
    status: i32,
    stderr: String,
    calls: Vec<Vec<String>>,
    summary: String,
    output: String,
}

impl ScriptRun {
    /// The call that ran `awconf run`, and the words from that `run` on (the first word is
    /// the runtime's own `run`).
    fn awconf_run(&self) -> (&[String], Vec<String>) {
        let call = self
            .calls
            .iter()
            .find(|c| c.iter().any(|a| a == "--report"))
            .unwrap_or_else(|| panic!("no awconf run among {:?}", self.calls));
        let at = 1 + call[1..]
            .iter()
            .position(|a| a == "run")
            .expect("awconf run");
        (call, call[at..].to_vec())
    }
}

impl Stand {
    fn new() -> Stand {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["bin", "calls", "workspace"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        for fake in ["docker", "ctr"] {
            let path = dir.path().join("bin").join(fake);
            std::fs::write(&path, FAKE).unwrap();
            make_executable(&path);
        }
        Stand { dir }
    }

    fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// A file in the workspace, executable.
    fn file(&self, path: &str) {
        let path = self.workspace().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        make_executable(&path);
    }

    fn run(&self, env: &[(&str, &str)]) -> ScriptRun {
        let calls = self.dir.path().join("calls");
        for old in std::fs::read_dir(&calls).unwrap() {
            std::fs::remove_file(old.unwrap().path()).unwrap();
        }
        let summary = self.dir.path().join("summary.md");
        let output = self.dir.path().join("output");
        std::fs::write(&summary, "").unwrap();
        std::fs::write(&output, "").unwrap();
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let script = self.dir.path().join("entrypoint.sh");
        std::fs::write(&script, SCRIPT_TEXT).unwrap();
        let out = Command::new("bash")
            .arg(script)
            .env_clear()
            .env("PATH", path)
            .env("FAKE_CALLS", &calls)
            .env("FAKE_IMAGE", IMAGE)
            .env("GITHUB_WORKSPACE", self.workspace())
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("GITHUB_OUTPUT", &output)
            .envs(env.iter().copied())
            .current_dir(self.dir.path())
            .output()
            .expect("bash runs");
        let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(&calls)
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                let n = path.file_name().unwrap().to_string_lossy().parse().unwrap();
                (n, path)
            })
            .collect();
        files.sort();
        let calls = files
            .iter()
            .map(|(_, path)| {
                let bytes = std::fs::read(path).unwrap();
                String::from_utf8(bytes)
                    .unwrap()
                    .split_terminator('\0')
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        ScriptRun {
            status: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            calls,
            summary: std::fs::read_to_string(&summary).unwrap(),
            output: std::fs::read_to_string(&output).unwrap(),
        }
    }
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

#[test]
fn the_entry_script_runs_awconf_run_as_the_inputs_say() {
    let stand = Stand::new();
    stand.file("bin/manager");
    let shell = |line: &str| ControllerMode::External {
        command: ExternalCommand::Shell(line.into()),
    };
    type Check = fn(&SuiteOptions);
    type Inputs<'a> = &'a [(&'a str, &'a str)];
    let table: &[(Inputs, ControllerMode, Check)] = &[
        (&[], ControllerMode::Embedded, |o| {
            assert_eq!(o.report_dir, Path::new("awconf-report"));
            assert_eq!(o.kubernetes, clusters::toolchain::KUBERNETES);
            assert_eq!(o.tags, None);
        }),
        (
            &[
                ("INPUT_CONTROLLER", "reference"),
                ("INPUT_KUEUE_VERSION", "v0.18.4"),
                ("INPUT_KUBERNETES_VERSION", "v1.35.4"),
                ("INPUT_TAGS", "@kueue and not @serial"),
                ("INPUT_REPORT_DIR", "reports/pair/"),
            ],
            ControllerMode::Reference {
                version: clusters::toolchain::APPWRAPPER_DEFAULT.into(),
            },
            |o| {
                assert_eq!(o.kueue.label(), "v0.18.4");
                assert_eq!(o.kubernetes, "v1.35.4");
                assert_eq!(o.tags.as_deref(), Some("@kueue and not @serial"));
                assert_eq!(o.report_dir, Path::new("reports/pair"));
            },
        ),
        (
            &[("INPUT_CONTROLLER", "process")],
            ControllerMode::Process { binary: None },
            |_| {},
        ),
        // The binary alone is the controller.
        (
            &[("INPUT_CONTROLLER_BINARY", "bin/manager")],
            shell("exec \"$CONTROLLER_BINARY\""),
            |_| {},
        ),
        // A command line, with placeholders and quotes kept as they are.
        (
            &[
                (
                    "INPUT_CONTROLLER",
                    "kubectl apply -f {config} && exec \"$CONTROLLER_BINARY\" --x='a b'",
                ),
                ("INPUT_CONTROLLER_BINARY", "bin/manager"),
            ],
            shell("kubectl apply -f {config} && exec \"$CONTROLLER_BINARY\" --x='a b'"),
            |_| {},
        ),
        // One argument a line, spaces and all.
        (
            &[(
                "INPUT_EXTRA_ARGS",
                "  --retries=2\n\n--keep-on-failure\nWorking with Kueue: admitted  \n",
            )],
            ControllerMode::Embedded,
            |o| {
                assert_eq!(o.retries, 2);
                assert!(o.keep_on_failure);
                assert_eq!(o.filters, ["Working with Kueue: admitted"]);
            },
        ),
    ];
    for runtime in ["docker", "containerd"] {
        for (env, mode, check) in table {
            let mut env = env.to_vec();
            env.extend([("AWCONF_RUNTIME", runtime), ("AWCONF_IMAGE", IMAGE)]);
            let run = stand.run(&env);
            assert_eq!(run.status, 0, "{env:?}: {}", run.stderr);
            let (call, args) = run.awconf_run();
            let o = options(&args).unwrap_or_else(|e| panic!("{env:?}: {args:?}: {e:#}"));
            assert_eq!(&o.controller, mode, "{env:?}");
            assert_eq!(o.cluster, ClusterChoice::Local);
            check(&o);
            let binary = env.iter().any(|(k, _)| *k == "INPUT_CONTROLLER_BINARY");
            let binary_env = format!("CONTROLLER_BINARY={MOUNT}/bin/manager");
            let workspace = stand.workspace().canonicalize().unwrap();
            let container: Vec<String> = match runtime {
                "docker" => {
                    let mount = format!("type=bind,source={},target={MOUNT}", workspace.display());
                    let mut want = words(&["run", "--rm", "--init", "--mount", &mount]);
                    want.extend(words(&["--workdir", MOUNT]));
                    if binary {
                        want.extend(words(&["--env", &binary_env]));
                    }
                    want.extend(words(&["--entrypoint", "awconf", IMAGE]));
                    want
                }
                _ => {
                    let mount = format!(
                        "type=bind,src={},dst={MOUNT},options=rbind:rw",
                        workspace.display()
                    );
                    let mut want = words(&["run", "--rm", "--net-host", "--mount", &mount]);
                    want.extend(words(&["--cwd", MOUNT]));
                    if binary {
                        want.extend(words(&["--env", &binary_env]));
                    }
                    want.push(IMAGE.into());
                    assert!(call[want.len()].starts_with("awconf-action-"), "{call:?}");
                    want.extend([call[want.len()].clone(), "awconf".into()]);
                    want
                }
            };
            assert_eq!(
                call[..call.len() - args.len()],
                container,
                "{runtime} {env:?}"
            );
        }
    }
}

#[test]
fn the_entry_script_reports_awconfs_status_and_summary() {
    let stand = Stand::new();
    let results = stand.workspace().join("awconf-report/results.json");
    std::fs::create_dir_all(results.parent().unwrap()).unwrap();
    for runtime in ["docker", "containerd"] {
        for status in ["0", "1"] {
            std::fs::write(&results, "{}").unwrap();
            let run = stand.run(&[
                ("AWCONF_RUNTIME", runtime),
                ("INPUT_IMAGE", IMAGE),
                ("FAKE_STATUS", status),
            ]);
            assert_eq!(run.status.to_string(), status, "{}", run.stderr);
            assert_eq!(run.summary, format!("the summary of {IMAGE}\n"));
            assert_eq!(
                run.output,
                format!("exit-code={status}\nreport-dir=awconf-report\n")
            );
            let call = run.calls.iter().find(|c| c.contains(&"summary".into()));
            let call = call.expect("a call for the summary");
            assert!(
                call.ends_with(&words(&["report", "summary", "awconf-report"])),
                "{call:?}"
            );
        }
    }
    // A run that wrote no results: the summary says so; docker's own failures are the
    // environment's.
    std::fs::remove_file(&results).unwrap();
    for (status, want) in [("3", 3), ("125", 3), ("2", 2)] {
        let run = stand.run(&[("AWCONF_IMAGE", IMAGE), ("FAKE_STATUS", status)]);
        assert_eq!(run.status, want, "{}", run.stderr);
        assert!(
            run.summary.contains(&format!(
                "awconf exited with status {want} before it wrote any results"
            )),
            "{}",
            run.summary
        );
    }
    // The default image is the action's, below the input and the override.
    let run = stand.run(&[("AWCONF_DEFAULT_IMAGE", "ghcr.io/o/awconf-runner@sha256:1")]);
    assert!(
        run.awconf_run()
            .0
            .contains(&"ghcr.io/o/awconf-runner@sha256:1".to_string())
    );
    let run = stand.run(&[("AWCONF_DEFAULT_IMAGE", "d"), ("INPUT_IMAGE", "i")]);
    assert!(run.awconf_run().0.contains(&"i".to_string()));
}

#[test]
fn the_entry_script_refuses_bad_inputs_before_anything_runs() {
    let stand = Stand::new();
    stand.file("bin/manager");
    std::fs::write(stand.workspace().join("not-executable"), "").unwrap();
    let table: &[(&[(&str, &str)], &str)] = &[
        (&[("AWCONF_IMAGE", "")], "no runner image"),
        (
            &[("INPUT_REPORT_DIR", "/tmp/r")],
            "report-dir must be relative",
        ),
        (
            &[("INPUT_REPORT_DIR", "a/../../r")],
            "report-dir must stay inside",
        ),
        (
            &[("INPUT_CONTROLLER_BINARY", "bin/none")],
            "not an executable file",
        ),
        (
            &[("INPUT_CONTROLLER_BINARY", "not-executable")],
            "not an executable file",
        ),
        (
            &[
                ("INPUT_CONTROLLER_BINARY", "bin/manager"),
                ("INPUT_CONTROLLER", "reference"),
            ],
            "controller-binary goes with controller embedded",
        ),
        (&[("INPUT_CONTROLLER", "external")], "not external"),
        (
            &[("INPUT_IMAGE_ARCHIVE", "none.tar")],
            "is not a file in the workspace",
        ),
        (&[("AWCONF_RUNTIME", "podman")], "docker or containerd"),
    ];
    for (env, want) in table {
        // The later value wins: a case's AWCONF_IMAGE replaces this one.
        let mut all = vec![("AWCONF_IMAGE", IMAGE)];
        all.extend(env.iter().copied());
        let run = stand.run(&all);
        assert_eq!(run.status, 2, "{env:?}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{env:?}: {}", run.stderr);
        assert!(run.calls.is_empty(), "{env:?}: {:?}", run.calls);
    }
}

/// `${{ ... }}` in a workflow's `with:` value, from the environment, the matrix and the
/// outputs of steps and jobs (empty: what a run computes).
fn expand(value: &str, env: &BTreeMap<String, String>) -> String {
    let matrix = [
        ("matrix.kueue", "v0.19.2"),
        ("matrix.kubernetes", "v1.35.4"),
        ("matrix.cluster", "kind"),
        ("matrix.upgrade-from", "v0.18.4"),
    ];
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        let expr = rest[start + 3..end].trim();
        let value = if let Some(name) = expr.strip_prefix("env.") {
            expand(env.get(name).map(String::as_str).unwrap_or(""), env)
        } else if let Some((_, v)) = matrix.iter().find(|(k, _)| *k == expr) {
            v.to_string()
        } else if expr.starts_with("steps.") || expr.starts_with("needs.") {
            String::new()
        } else {
            panic!("an expression this test does not know: {expr}");
        };
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out + rest
}

fn env_of(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
        .unwrap_or_default()
}

/// Every workflow that uses the action (`./` in awconf's own, `your-org/awconf@SHA` in the
/// ones users copy) gives only inputs it declares, and its inputs make a run awconf accepts.
#[test]
fn the_workflows_use_the_action_with_inputs_that_make_a_run() {
    let (inputs, _, _) = action();
    let stand = Stand::new();
    let mut runs: BTreeMap<String, SuiteOptions> = BTreeMap::new();
    for (file, content) in WORKFLOWS {
        let workflow = yaml(file, content);
        for (job_name, job) in workflow["jobs"].as_object().unwrap() {
            let mut env = env_of(&workflow["env"]);
            env.extend(env_of(&job["env"]));
            for step in job["steps"].as_array().into_iter().flatten() {
                let uses = text(&step["uses"]);
                if uses != "./" && !uses.starts_with("your-org/awconf@") {
                    continue;
                }
                if let Some(sha) = uses.strip_prefix("your-org/awconf@") {
                    assert!(
                        sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                        "{}: the action by full commit SHA, not {sha}",
                        file
                    );
                }
                let mut vars: Vec<(String, String)> = vec![("AWCONF_IMAGE".into(), IMAGE.into())];
                for (key, value) in step["with"].as_object().into_iter().flatten() {
                    assert!(
                        inputs.contains_key(key),
                        "{}: {job_name}: the action has no input {key}",
                        file
                    );
                    let value = expand(&text(value), &env);
                    if key == "controller-binary" && !value.is_empty() {
                        stand.file(&value);
                    }
                    if key == "image-archive" && !value.is_empty() {
                        stand.file(&value);
                    }
                    vars.push((variable(key), value));
                }
                let vars: Vec<(&str, &str)> =
                    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let run = stand.run(&vars);
                assert_eq!(run.status, 0, "{}: {job_name}: {}", file, run.stderr);
                let (_, args) = run.awconf_run();
                let o = options(&args).unwrap_or_else(|e| {
                    panic!("{}: {job_name}: awconf {}: {e:#}", file, args.join(" "))
                });
                runs.insert(format!("{}:{job_name}", file), o);
            }
        }
    }
    let names: Vec<&str> = runs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            ".github/workflows/release.yml:smoke",
            "ci/github-actions.yml:embedded",
            "ci/version-matrix.yml:pair",
        ]
    );
    // The user's gate: their binary under the reference operator's ConfigMap, no webhooks.
    let embedded = &runs["ci/github-actions.yml:embedded"];
    let ControllerMode::External {
        command: ExternalCommand::Shell(line),
    } = &embedded.controller
    else {
        panic!("the user's embedded job runs an external controller: {embedded:?}");
    };
    assert!(line.contains("{operator-config}"), "{line}");
    assert!(line.ends_with("exec \"$CONTROLLER_BINARY\""), "{line}");
    assert_eq!(embedded.tags.as_deref(), Some("not @webhook"));
    // The matrix: the pair of its job, the reference operator unless told otherwise.
    let pair = &runs["ci/version-matrix.yml:pair"];
    assert_eq!(pair.kubernetes, "v1.35.4");
    assert_eq!(pair.kueue.label(), "v0.19.2");
    assert!(matches!(pair.controller, ControllerMode::Reference { .. }));
    assert_eq!(
        pair.report_dir,
        Path::new("kueue-v0.19.2_kubernetes-v1.35.4")
    );
    // The release's smoke test: awconf's own controller.
    assert_eq!(
        runs[".github/workflows/release.yml:smoke"].controller,
        ControllerMode::Embedded
    );
}
