//! `awconf run`: the conformance suite, the main job.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use clusters::Provider;
use clusters::install::Part;
use conformance_steps::options::ExternalCommand;
use conformance_steps::plan::Plan;
use conformance_steps::suite::run_plan;
use conformance_steps::{ClusterChoice, ControllerMode, FeatureSet, SuiteOptions, Summary};

use crate::cli::exit::Exit;
use crate::cli::monitor_source::MonitorSource;

/// Which cluster the suite runs on: `--cluster`'s names and help are the providers' own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterArg(pub Provider);

impl ClusterArg {
    const LOCAL: ClusterArg = ClusterArg(Provider::Local);
}

impl ValueEnum for ClusterArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [ClusterArg; Provider::ALL.len()] = {
            let mut all = [ClusterArg::LOCAL; Provider::ALL.len()];
            let mut i = 0;
            while i < all.len() {
                all[i] = ClusterArg(Provider::ALL[i]);
                i += 1;
            }
            all
        };
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()).help(self.0.about()))
    }
}

/// The controller under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ControllerArg {
    /// Ours, in this process.
    Embedded,
    /// Ours as a child process, killable with SIGKILL (--controller-bin).
    Process,
    /// The reference Go operator, built from its module (--appwrapper-version).
    Reference,
    /// The command after `--` (or --controller-command).
    External,
    /// Ours, installed into the cluster from its install manifests (--image).
    InCluster,
    /// One already in the cluster, ours or the reference, with the release's object names
    /// (--namespace).
    Installed,
}

#[derive(Args)]
#[command(after_long_help = crate::cli::exit::help())]
pub struct RunArgs {
    /// The cluster to run on.
    #[arg(long, env = "AWCONF_CLUSTER", value_enum, default_value_t = ClusterArg::LOCAL)]
    cluster: ClusterArg,
    /// With `--cluster existing`: its kubeconfig (default: kubectl's, from KUBECONFIG or
    /// ~/.kube/config).
    #[arg(long, env = "AWCONF_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// With `--cluster existing`: the kubeconfig context (default: its current one).
    #[arg(long, env = "AWCONF_CONTEXT")]
    context: Option<String>,
    /// With `--cluster existing`: install these into it first, a comma-separated subset of
    /// kueue,kwok,controller (it creates CRDs, namespaces and fake nodes there).
    #[arg(long, env = "AWCONF_INSTALL", value_name = "COMPONENTS")]
    install: Option<String>,
    /// The controller under test.
    #[arg(long, env = "AWCONF_CONTROLLER", value_enum, default_value_t = ControllerArg::Embedded)]
    pub(crate) controller: ControllerArg,
    /// With `--controller process`: our controller's binary (default: `appwrapper-controller`
    /// beside this executable).
    #[arg(long, env = "AWCONF_CONTROLLER_BIN", value_name = "PATH")]
    controller_bin: Option<PathBuf>,
    /// With `--controller external`: the command as one shell line, run by `sh -c` (the
    /// words after `--` take its place).
    #[arg(long, env = "AWCONF_CONTROLLER_COMMAND", value_name = "LINE")]
    controller_command: Option<String>,
    /// With `--controller installed`: its namespace.
    #[arg(long, env = "AWCONF_NAMESPACE", value_name = "NS")]
    namespace: Option<String>,
    /// With `--controller in-cluster`: a published image of the controller, instead of our
    /// binary made into an image and loaded into the nodes.
    #[arg(long, env = "AWCONF_CONTROLLER_IMAGE")]
    image: Option<String>,
    #[command(flatten)]
    images: crate::cli::install::LoaderArg,
    /// With `--controller reference`: the operator's version (default: the pinned one).
    #[arg(long, env = "AWCONF_APPWRAPPER_VERSION", value_name = "VERSION")]
    appwrapper_version: Option<String>,
    #[command(flatten)]
    kueue: crate::cli::kueue_source::KueueArgs,
    /// The Kueue release the upgrade scenario (`@kueue-upgrade`) starts from before it
    /// upgrades Kueue in place to the one under test (default: the pinned release before it).
    #[arg(long, env = "AWCONF_KUEUE_UPGRADE_FROM", value_name = "VERSION")]
    kueue_upgrade_from: Option<String>,
    /// The controller the upgrade scenario (`@controller-upgrade`) runs before the controller
    /// under test takes its place with work in flight: `reference` (the pinned reference
    /// operator), `reference:VERSION`, or the path of an older build of ours. Without it the
    /// scenario is skipped.
    #[arg(
        long,
        env = "AWCONF_CONTROLLER_UPGRADE_FROM",
        value_name = "reference[:VERSION]|PATH"
    )]
    controller_upgrade_from: Option<String>,
    /// The Kubernetes release of the local cluster's control plane (default: v1.36.3; v1.34.12,
    /// v1.35.4 and v1.37.2 are pinned too; another tag is built if the Go module proxy serves it).
    #[arg(long, env = "AWCONF_KUBERNETES_VERSION", value_name = "VERSION")]
    kubernetes: Option<String>,
    /// A cucumber tag expression (for example `@kueue and not @serial`).
    #[arg(long, env = "AWCONF_TAGS")]
    tags: Option<String>,
    /// Where to write JUnit XML (default: junit.xml in the report directory).
    #[arg(long, env = "AWCONF_JUNIT")]
    junit: Option<PathBuf>,
    /// Directory for the reports and the artifacts of failed scenarios.
    #[arg(
        long,
        env = "AWCONF_REPORT_DIR",
        value_name = "DIR",
        default_value = "awconf-report"
    )]
    report: PathBuf,
    /// A directory of your own *.feature files, run beside the built-in features.
    #[arg(long, env = "AWCONF_FEATURES", value_name = "DIR")]
    features: Option<PathBuf>,
    /// A directory of your own *.feature files, run instead of the built-in features.
    #[arg(long, env = "AWCONF_ONLY_FEATURES", value_name = "DIR")]
    only_features: Option<PathBuf>,
    /// Run a failed scenario again, up to N times; one that then passes is reported flaky.
    #[arg(long, env = "AWCONF_RETRIES", value_name = "N", default_value_t = 0)]
    retries: usize,
    /// Run the scenarios whose failure says nothing of the controller (the machine starved of
    /// CPU, a stand probe of 500 ms or more; only states the monitor could not check; or a
    /// window's step that could not tell) again once the others are done, up to N times; one
    /// that then passes is reported flaky. 0 never runs them again.
    #[arg(
        long,
        env = "AWCONF_STARVED_RERUNS",
        value_name = "N",
        default_value_t = 1
    )]
    starved_reruns: usize,
    /// Leave a failed scenario's namespace and objects in place.
    #[arg(long, env = "AWCONF_KEEP_ON_FAILURE")]
    keep_on_failure: bool,
    /// Scenarios at once (`@serial` ones run alone).
    #[arg(
        long,
        env = "AWCONF_CONCURRENCY",
        value_name = "N",
        default_value_t = 32
    )]
    concurrency: usize,
    /// Where the invariant monitor reads the AppWrappers' states: every write from the API
    /// server's audit log (the local cluster's, or --audit-log's), or a watch, which misses
    /// what changes while the API server or etcd is down.
    #[arg(long, env = "AWCONF_MONITOR_SOURCE", value_enum, default_value_t = MonitorSource::AuditLog)]
    monitor_source: MonitorSource,
    /// An existing cluster's API-server audit log, readable here, that records every write to
    /// AppWrappers at the RequestResponse level (the local cluster's policy shows one; where it
    /// also records creations and deletions, releases are judged from it).
    #[arg(long, env = "AWCONF_AUDIT_LOG", value_name = "PATH")]
    audit_log: Option<PathBuf>,
    /// Run only scenarios whose `feature: scenario` title contains one of these.
    filters: Vec<String>,
    /// For `--controller external`: the command that runs the controller under test; one
    /// word is a shell line (`-- 'a && b'`), more are run as they are, without a shell.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl RunArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let options = self.options(SuiteOptions::default())?;
        // Bad feature files, and filters that select nothing, stop here: nothing started yet.
        let plan = Plan::prepare(&options)?;
        anyhow::ensure!(
            !plan.selected().is_empty(),
            "no scenario matches {}; `awconf features list` shows the features",
            plan.selection.describe()
        );
        conformance_steps::logging::init(&options.report_dir);
        let summary = run_plan(options, plan).await?;
        Ok(report(&summary))
    }

    /// The suite's options: these flags (each over its environment variable) over `options`.
    pub(crate) fn options(self, mut options: SuiteOptions) -> anyhow::Result<SuiteOptions> {
        let command = ExternalCommand::from_words(self.command)
            .or(self.controller_command.map(ExternalCommand::Shell));
        let controller = self.controller;
        let only = |given: bool, flag: &str, mode: ControllerArg| {
            anyhow::ensure!(
                !given || controller == mode,
                "{flag} goes with --controller {}",
                value_name(mode)
            );
            Ok(())
        };
        only(
            self.appwrapper_version.is_some(),
            "--appwrapper-version",
            ControllerArg::Reference,
        )?;
        only(self.image.is_some(), "--image", ControllerArg::InCluster)?;
        only(
            self.namespace.is_some(),
            "--namespace",
            ControllerArg::Installed,
        )?;
        only(
            self.controller_bin.is_some(),
            "--controller-bin",
            ControllerArg::Process,
        )?;
        options.controller =
            ControllerMode::parse(&value_name(controller), command, self.controller_bin)
                .map_err(anyhow::Error::msg)?
                .with_reference_version(self.appwrapper_version)
                .with_image(self.image)
                .with_namespace(self.namespace);
        options.cluster = ClusterChoice::parse(
            self.cluster.0,
            self.kubeconfig,
            self.context,
            self.install.as_deref(),
            self.images.load_images,
        )
        .map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            options.cluster == ClusterChoice::Local
                || matches!(
                    options.controller,
                    ControllerMode::InCluster { .. } | ControllerMode::Installed { .. }
                ),
            "--cluster {} goes with --controller in-cluster or installed: --controller {} runs \
             on this machine beside the local cluster (add --controller installed to judge the \
             controller already running there)",
            value_name(self.cluster),
            options.controller.name()
        );
        if let ClusterChoice::Existing { install, .. } = &options.cluster {
            anyhow::ensure!(
                !install.contains(&Part::Controller) || options.controller.in_cluster(),
                "--install controller goes with --controller in-cluster"
            );
        }
        let default = clusters::toolchain::KUEUE_DEFAULT;
        options.kueue = self.kueue.source(default)?;
        if let Some(tag) = &self.kueue_upgrade_from {
            anyhow::ensure!(
                self.kueue.kueue_source.is_none() && self.kueue.kueue_binary.is_none(),
                "--kueue-upgrade-from goes with a Kueue release (--kueue), not with \
                 --kueue-source or --kueue-binary"
            );
            options.kueue_upgrade_from = Some(
                conformance_steps::options::parse_upgrade_from("--kueue-upgrade-from", tag)
                    .map_err(anyhow::Error::msg)?,
            );
        }
        options.kueue_upgrade().map_err(anyhow::Error::msg)?;
        if let Some(from) = &self.controller_upgrade_from {
            options.controller_upgrade_from = Some(
                conformance_steps::options::parse_controller_upgrade_from(from)
                    .map_err(anyhow::Error::msg)?,
            );
        }
        if let Some(tag) = &self.kubernetes {
            anyhow::ensure!(
                options.cluster == ClusterChoice::Local,
                "--kubernetes chooses the local cluster's control plane; another cluster runs \
                 the release it was created with"
            );
            options.kubernetes = clusters::toolchain::kubernetes_release(tag)
                .map_err(|e| anyhow::anyhow!("--kubernetes: {e}"))?;
        }
        options.tags = self.tags;
        options.filters = self.filters;
        options.junit = self.junit;
        options.report_dir = self.report;
        options.features =
            FeatureSet::from_dirs(self.features, self.only_features).map_err(anyhow::Error::msg)?;
        options.retries = self.retries;
        options.starved_reruns = self.starved_reruns;
        options.keep_on_failure = self.keep_on_failure;
        options.concurrency = self.concurrency;
        options.monitor_from_log = self.monitor_source == MonitorSource::AuditLog;
        if let Some(path) = &self.audit_log {
            anyhow::ensure!(
                options.cluster != ClusterChoice::Local,
                "--audit-log is for --cluster existing: the local cluster's own log is read"
            );
            anyhow::ensure!(
                path.is_file(),
                "--audit-log {}: no such file here; give the path of the API server's \
                 --audit-log-path as this machine sees it",
                path.display()
            );
        }
        options.audit_log = self.audit_log;
        Ok(options)
    }
}

/// Prints a run's closing lines (`N passed, N failed` last) and gives its exit code.
pub(crate) fn report(summary: &Summary) -> ExitCode {
    for line in summary.report_lines() {
        println!("{line}");
    }
    if summary.success() {
        Exit::Passed.into()
    } else {
        Exit::Failed.into()
    }
}

/// How the flag spells `value` (`in-cluster`): what the suite's own parsers take.
pub(crate) fn value_name(value: impl ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod action_gate;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args_alone::parse;

    fn options(args: &[&str]) -> anyhow::Result<SuiteOptions> {
        parse::<RunArgs>(args)?.options(SuiteOptions::default())
    }

    #[test]
    fn the_controller_flags_reach_the_mode() {
        let mode = |args: &[&str]| options(args).map(|o| o.controller);
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        let table: &[(&[&str], ControllerMode)] = &[
            (
                &[
                    "--controller",
                    "external",
                    "--",
                    "manager",
                    "--kubeconfig",
                    "{kubeconfig}",
                ],
                ControllerMode::External {
                    command: ExternalCommand::Argv(words(&[
                        "manager",
                        "--kubeconfig",
                        "{kubeconfig}",
                    ])),
                },
            ),
            (
                &["--controller", "external", "--", "a && b"],
                ControllerMode::External {
                    command: ExternalCommand::Shell("a && b".into()),
                },
            ),
            (
                &["--controller", "external", "--controller-command", "x | y"],
                ControllerMode::External {
                    command: ExternalCommand::Shell("x | y".into()),
                },
            ),
            (
                &["--controller", "process", "--controller-bin", "/opt/c"],
                ControllerMode::Process {
                    binary: Some("/opt/c".into()),
                },
            ),
        ];
        for (args, want) in table {
            assert_eq!(&mode(args).unwrap(), want, "{args:?}");
        }
        let errors: &[(&[&str], &str)] = &[
            (
                &["--controller-bin", "/opt/c"],
                "--controller-bin goes with --controller process",
            ),
            (&["--controller", "external"], "needs a command"),
            (
                &["--controller", "kind"],
                "possible values: embedded, process, reference",
            ),
        ];
        for (args, want) in errors {
            let e = format!("{:#}", mode(args).unwrap_err());
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn kubernetes_chooses_the_local_control_plane() {
        let release = |args: &[&str]| options(args).map(|o| o.kubernetes);
        assert_eq!(release(&[]).unwrap(), clusters::toolchain::KUBERNETES);
        assert_eq!(release(&["--kubernetes", "v1.35.4"]).unwrap(), "v1.35.4");
        let errors: &[(&[&str], &str)] = &[
            (&["--kubernetes", "1.35"], "is not a Kubernetes release tag"),
            (
                &[
                    "--kubernetes",
                    "v1.35.4",
                    "--cluster",
                    "existing",
                    "--kubeconfig",
                    "k",
                    "--controller",
                    "installed",
                ],
                "another cluster runs the release it was created with",
            ),
        ];
        for (args, want) in errors {
            let e = format!("{:#}", release(args).unwrap_err());
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn another_cluster_with_a_controller_of_this_machine_is_a_usage_error() {
        for controller in ["embedded", "process", "reference", "external"] {
            let args = [
                "--cluster",
                "existing",
                "--controller",
                controller,
                "--",
                "x",
            ];
            let args = if controller == "external" {
                &args[..]
            } else {
                &args[..4]
            };
            let e = options(args).unwrap_err();
            assert!(
                e.to_string()
                    .contains("--cluster existing goes with --controller in-cluster or installed"),
                "{controller}: {e}"
            );
            assert_eq!(Exit::of(&e), Exit::Usage, "{controller}");
        }
        let e = options(&["--cluster", "existing"]).unwrap_err();
        assert!(e.to_string().contains("--controller embedded runs"), "{e}");
        for controller in ["in-cluster", "installed"] {
            let args = ["--cluster", "existing", "--controller", controller];
            assert!(options(&args).is_ok(), "{controller}");
        }
    }

    #[test]
    fn feature_and_retry_flags_reach_the_options() {
        let table: &[(&[&str], FeatureSet, usize)] = &[
            (&[], FeatureSet::BuiltIn, 0),
            (
                &["--features", "mine", "--retries", "2"],
                FeatureSet::BuiltInAnd("mine".into()),
                2,
            ),
            (
                &["--only-features", "mine"],
                FeatureSet::Only("mine".into()),
                0,
            ),
        ];
        for (args, features, retries) in table {
            let options = options(args).unwrap();
            assert_eq!(&options.features, features, "{args:?}");
            assert_eq!(options.retries, *retries, "{args:?}");
        }
        let both = options(&["--features", "a", "--only-features", "b"]).unwrap_err();
        assert!(both.to_string().contains("give one"), "{both}");
    }

    #[test]
    fn the_upgrade_start_is_a_release_older_than_the_kueue_under_test() {
        let from = |args: &[&str]| options(args).map(|o| o.kueue_upgrade_from);
        assert_eq!(from(&[]).unwrap(), None);
        assert_eq!(
            from(&["--kueue-upgrade-from", "v0.17.8"]).unwrap(),
            Some(clusters::kueue::KueueVersion(0, 17, 8))
        );
        let table: &[(&[&str], &str)] = &[
            (
                &["--kueue-upgrade-from", "0.18"],
                "--kueue-upgrade-from: \"0.18\" is not a Kueue version",
            ),
            (
                &["--kueue", "v0.18.4", "--kueue-upgrade-from", "v0.19.2"],
                "--kueue-upgrade-from v0.19.2 is not older than the Kueue under test v0.18.4",
            ),
            (
                &["--kueue-source", ".", "--kueue-upgrade-from", "v0.18.4"],
                "--kueue-upgrade-from goes with a Kueue release",
            ),
        ];
        for (args, want) in table {
            let e = options(args).unwrap_err().to_string();
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_controller_upgrade_starts_from_the_reference_or_a_binary() {
        let from = |args: &[&str]| options(args).map(|o| o.controller_upgrade_from);
        assert_eq!(from(&[]).unwrap(), None);
        assert_eq!(
            from(&["--controller-upgrade-from", "reference"]).unwrap(),
            Some(ControllerMode::Reference {
                version: clusters::toolchain::APPWRAPPER_DEFAULT.into()
            })
        );
        let e = from(&["--controller-upgrade-from", "./no-such-build"]).unwrap_err();
        assert!(e.to_string().contains("no such file"), "{e}");
    }

    /// Splits a shell command line into words: whitespace outside quotes separates them,
    /// single and double quotes group and are removed, and `$NAME` is replaced from `env`.
    fn shell_words(line: &str, env: &[(String, String)]) -> Vec<String> {
        let mut expanded = line.to_string();
        for (name, value) in env {
            expanded = expanded.replace(&format!("${name}"), value);
        }
        let (mut words, mut word, mut quote, mut open) = (Vec::new(), String::new(), None, false);
        for c in expanded.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.push(c),
                (None, '"' | '\'') => (quote, open) = (Some(c), true),
                (None, c) if c.is_whitespace() => {
                    if open || !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    open = false;
                }
                (None, c) => word.push(c),
            }
        }
        if open || !word.is_empty() {
            words.push(word);
        }
        words
    }

    /// The workflows in ci/ run `awconf run ...` (`cargo run --release --locked -- run ...`
    /// in awconf's own): each of those command lines, with the first value of its matrix and
    /// the workflow's `env:` values (which may name the matrix), is one `awconf run` accepts.
    /// (The jobs that run the suite through awconf's action are checked in `action_gate`.)
    #[test]
    fn the_workflows_run_command_lines_that_awconf_accepts() {
        let matrix = [
            ("${{ matrix.kueue }}", "v0.19.2"),
            ("${{ matrix.cluster }}", "kind"),
            ("${{ matrix.kubernetes }}", "v1.35.4"),
        ];
        let with_matrix = |text: &str| {
            matrix
                .iter()
                .fold(text.to_string(), |t, (expr, value)| t.replace(expr, value))
        };
        let mut seen = Vec::new();
        for (file, text) in action_gate::WORKFLOWS
            .into_iter()
            .filter(|(file, _)| file.starts_with("ci/"))
        {
            let env: Vec<(String, String)> = text
                .lines()
                .filter_map(|l| l.trim().split_once(": "))
                .filter(|(k, _)| {
                    !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                })
                .map(|(k, v)| (k.to_string(), with_matrix(v.trim())))
                .collect();
            for line in text.lines() {
                let line = line
                    .trim()
                    .trim_start_matches("- run: ")
                    .trim_start_matches("run: ");
                let Some(args) = line
                    .strip_prefix("cargo run --release --locked -- run ")
                    .or_else(|| line.strip_prefix("awconf run "))
                else {
                    continue;
                };
                let args = shell_words(&with_matrix(args), &env);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                match options(&args) {
                    Ok(o) => seen.push((file, o)),
                    Err(e) => panic!("{file}: awconf run {}: {e:#}", args.join(" ")),
                }
            }
        }
        assert_eq!(
            seen.len(),
            2,
            "one run in each job that does not use the action"
        );
        let (_, kind) = &seen[0];
        assert!(matches!(
            kind.controller,
            ControllerMode::InCluster { image: Some(_) }
        ));
        assert!(kind.cluster.is_remote());
        // awconf's own: the cluster named by the matrix, created by the run.
        let (_, providers) = &seen[1];
        assert!(matches!(
            providers.cluster,
            ClusterChoice::Created(clusters::Provider::Kind)
        ));
        assert!(matches!(
            providers.controller,
            ControllerMode::InCluster { image: None }
        ));
    }

    #[test]
    fn shell_words_group_quotes_and_expand_variables() {
        let env = [("V".to_string(), "v0.19.2".to_string())];
        assert_eq!(
            shell_words(
                r#"--kueue "$V" --tags "not @webhook" -- 'a | b && c'"#,
                &env
            ),
            [
                "--kueue",
                "v0.19.2",
                "--tags",
                "not @webhook",
                "--",
                "a | b && c"
            ]
        );
    }
}
