//! `awconf run`: the conformance suite, the main job.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use clusters::install::Part;
use conformance_steps::{ClusterChoice, ControllerMode, FeatureSet, Plan, SuiteOptions, run_plan};

#[derive(Args)]
pub struct RunArgs {
    /// The cluster to run on: `local` (the embedded control plane), `existing` (yours, by
    /// --kubeconfig), or `kind`, `k3d`, `k3s` (created for the run and deleted after it).
    #[arg(long, default_value = "local", value_parser = ["local", "existing", "kind", "k3d", "k3s"])]
    cluster: String,
    /// With `--cluster existing`: its kubeconfig.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// With `--cluster existing`: the kubeconfig context (default: its current one).
    #[arg(long)]
    context: Option<String>,
    /// With `--cluster existing`: install these into it first, a comma-separated subset of
    /// kueue,kwok,controller (it creates CRDs, namespaces and fake nodes there).
    #[arg(long, value_name = "COMPONENTS")]
    install: Option<String>,
    /// The controller under test: `embedded` (in this process), `process` (our binary as a
    /// child, killable with SIGKILL), `reference` (the reference Go operator, built from its
    /// module), `external` (the command after `--`), `in-cluster` (our controller
    /// installed into the cluster from its install manifests) or `installed` (a controller
    /// already in the cluster, ours or the reference, with the release's object names).
    #[arg(long, default_value = "embedded", value_parser = ["embedded", "process", "reference", "external", "in-cluster", "installed"])]
    controller: String,
    /// With `--controller installed`: its namespace.
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// With `--controller in-cluster`: a published image of the controller, instead of our
    /// binary made into an image and loaded into the nodes.
    #[arg(long)]
    image: Option<String>,
    #[command(flatten)]
    images: crate::cli::install::LoaderArg,
    /// With `--controller reference`: the operator's version (default: the pinned one).
    #[arg(long, value_name = "VERSION")]
    appwrapper_version: Option<String>,
    #[command(flatten)]
    kueue: crate::cli::kueue_source::KueueArgs,
    /// The Kueue release the upgrade scenario (`@kueue-upgrade`) starts from before it
    /// upgrades Kueue in place to the one under test (default: the pinned release before it).
    #[arg(long, value_name = "VERSION", conflicts_with_all = ["kueue_source", "kueue_binary"])]
    kueue_upgrade_from: Option<String>,
    /// Cucumber tag expression, e.g. `@kueue and not @serial`.
    #[arg(long)]
    tags: Option<String>,
    /// Where to write JUnit XML (default: <report>/junit.xml).
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Directory for the reports and the artifacts of failed scenarios.
    #[arg(long)]
    report: Option<PathBuf>,
    /// A directory of your own *.feature files, run beside the built-in features.
    #[arg(long, value_name = "DIR", conflicts_with = "only_features")]
    features: Option<PathBuf>,
    /// A directory of your own *.feature files, run instead of the built-in features.
    #[arg(long, value_name = "DIR")]
    only_features: Option<PathBuf>,
    /// Run a failed scenario again, up to N times; one that then passes is reported flaky.
    #[arg(long, value_name = "N")]
    retries: Option<usize>,
    /// Leave a failed scenario's namespace and objects in place.
    #[arg(long)]
    keep_on_failure: bool,
    /// Scenarios at once (`@serial` ones run alone).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Run only scenarios whose `feature: scenario` title contains one of these.
    filters: Vec<String>,
    /// For `--controller external`: the command that runs the controller under test.
    #[arg(last = true)]
    command: Vec<String>,
}

impl RunArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let options = self.options(SuiteOptions::from_env().map_err(anyhow::Error::msg)?)?;
        // Bad feature files, and filters that select nothing, stop here: nothing started yet.
        let plan = Plan::prepare(&options)?;
        anyhow::ensure!(
            !plan.selected().is_empty(),
            "no scenario matches {}; `awconf features list` shows the features",
            plan.selection.describe()
        );
        conformance_steps::logging::init(&options.report_dir);
        let summary = run_plan(options, plan).await?;
        for line in summary.report_lines() {
            println!("{line}");
        }
        Ok(if summary.success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }

    /// The suite's options: these flags over `options` (the environment's).
    fn options(self, mut options: SuiteOptions) -> anyhow::Result<SuiteOptions> {
        let command = (!self.command.is_empty()).then(|| self.command.join(" "));
        anyhow::ensure!(
            self.appwrapper_version.is_none() || self.controller == "reference",
            "--appwrapper-version goes with --controller reference"
        );
        anyhow::ensure!(
            self.image.is_none() || self.controller == "in-cluster",
            "--image goes with --controller in-cluster"
        );
        anyhow::ensure!(
            self.namespace.is_none() || self.controller == "installed",
            "--namespace goes with --controller installed"
        );
        options.controller = ControllerMode::parse(&self.controller, command, None)
            .map_err(anyhow::Error::msg)?
            .with_reference_version(self.appwrapper_version)
            .with_image(self.image)
            .with_namespace(self.namespace);
        options.cluster = ClusterChoice::parse(
            &self.cluster,
            self.kubeconfig,
            self.context,
            self.install.as_deref(),
            self.images.load_images,
        )
        .map_err(anyhow::Error::msg)?;
        if let ClusterChoice::Existing { install, .. } = &options.cluster {
            anyhow::ensure!(
                !install.contains(&Part::Controller) || options.controller.in_cluster(),
                "--install controller goes with --controller in-cluster"
            );
        }
        let default = options.kueue.label();
        if self.kueue != Default::default() {
            options.kueue = self.kueue.source(&default)?;
        }
        if let Some(tag) = &self.kueue_upgrade_from {
            options.kueue_upgrade_from = Some(
                conformance_steps::options::parse_upgrade_from("--kueue-upgrade-from", tag)
                    .map_err(anyhow::Error::msg)?,
            );
        }
        options.kueue_upgrade().map_err(anyhow::Error::msg)?;
        options.tags = self.tags.or(options.tags);
        options.filters = self.filters;
        options.junit = self.junit.or(options.junit);
        options.report_dir = self.report.unwrap_or(options.report_dir);
        if self.features.is_some() || self.only_features.is_some() {
            options.features = FeatureSet::from_dirs(self.features, self.only_features)
                .map_err(anyhow::Error::msg)?;
        }
        options.retries = self.retries.unwrap_or(options.retries);
        options.keep_on_failure |= self.keep_on_failure;
        options.concurrency = self.concurrency.unwrap_or(options.concurrency);
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    fn options(args: &[&str]) -> anyhow::Result<SuiteOptions> {
        let cli = Cli::try_parse_from(["awconf", "run"].iter().chain(args))?;
        match cli.command {
            Command::Run(run) => run.options(SuiteOptions::default()),
            _ => unreachable!("awconf run parses as Run"),
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
        assert!(both.to_string().contains("cannot be used with"), "{both}");
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
                "cannot be used with",
            ),
        ];
        for (args, want) in table {
            let e = options(args).unwrap_err().to_string();
            assert!(e.contains(want), "{args:?}: {e}");
        }
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
    #[test]
    fn the_workflows_run_command_lines_that_awconf_accepts() {
        let matrix = [
            ("${{ matrix.kueue }}", "v0.19.2"),
            ("${{ matrix.cluster }}", "kind"),
        ];
        let with_matrix = |text: &str| {
            matrix
                .iter()
                .fold(text.to_string(), |t, (expr, value)| t.replace(expr, value))
        };
        let mut seen = Vec::new();
        for file in ["ci/github-actions.yml", "ci/providers.yml"] {
            let text = std::fs::read_to_string(file).unwrap();
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
        assert_eq!(seen.len(), 3, "one run in each job");
        let (_, embedded) = &seen[0];
        let ControllerMode::External { command } = &embedded.controller else {
            panic!("the user's embedded job runs an external controller: {embedded:?}");
        };
        assert!(command.contains("{operator-config}") && command.ends_with("./bin/manager"));
        let (_, kind) = &seen[1];
        assert!(matches!(
            kind.controller,
            ControllerMode::InCluster { image: Some(_) }
        ));
        assert!(kind.cluster.is_remote());
        // awconf's own: the cluster named by the matrix, created by the run.
        let (_, providers) = &seen[2];
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
