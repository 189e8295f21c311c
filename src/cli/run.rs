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

    /// The workflows in ci/ run `cargo run --release -- run ...`: each of those command lines,
    /// with the first value of its matrix, is one `awconf run` accepts.
    #[test]
    fn the_workflows_run_command_lines_that_awconf_accepts() {
        let matrix = [
            ("${{ matrix.kueue }}", "v0.19.2"),
            ("${{ matrix.cluster }}", "kind"),
        ];
        let mut seen = 0;
        for file in ["ci/github-actions.yml", "ci/providers.yml"] {
            let text = std::fs::read_to_string(file).unwrap();
            for line in text.lines() {
                let Some((_, args)) = line.split_once("cargo run --release -- run") else {
                    continue;
                };
                let args = matrix
                    .iter()
                    .fold(args.to_string(), |a, (expr, value)| a.replace(expr, value));
                let args: Vec<&str> = args.split_whitespace().collect();
                if let Err(e) = options(&args) {
                    panic!("{file}: awconf run {}: {e:#}", args.join(" "));
                }
                seen += 1;
            }
        }
        assert_eq!(seen, 2);
    }
}
