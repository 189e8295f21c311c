//! `awconf matrix`: the suite on every pair of a Kueue release and a Kubernetes release, each
//! pair an `awconf run` of its own on a local cluster, with one report directory per pair, the
//! conformance matrix over them and a compact table.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use clusters::toolchain::{self, Component};
use conformance_steps::SuiteOptions;
use conformance_steps::options::{
    CONTROLLER_UPGRADE_TAG, ControllerUpgrade, KUEUE_UPGRADE_TAG, KueueUpgrade,
};
use conformance_steps::plan::Plan;
use conformance_steps::report::compare::{self, RunCounts};

use crate::cli::args_alone;
use crate::cli::exit::Exit;
use crate::cli::run::{ControllerArg, RunArgs};

#[derive(Args)]
#[command(after_long_help = crate::cli::exit::help())]
pub struct MatrixArgs {
    /// Kueue releases, comma-separated (default: every pinned one).
    #[arg(
        long,
        env = "AWCONF_MATRIX_KUEUE",
        value_name = "VERSIONS",
        value_delimiter = ','
    )]
    kueue: Vec<String>,
    /// Kubernetes releases of the local control plane, comma-separated (default: every
    /// pinned one).
    #[arg(
        long,
        env = "AWCONF_MATRIX_KUBERNETES",
        value_name = "VERSIONS",
        value_delimiter = ','
    )]
    kubernetes: Vec<String>,
    /// The controller under test: one that runs beside a local cluster (embedded, process,
    /// reference, or yours: external, with the command after `--`).
    #[arg(long, env = "AWCONF_CONTROLLER", value_enum, default_value_t = ControllerArg::Embedded)]
    controller: ControllerArg,
    /// With `--controller external`: the command as one shell line, run by `sh -c` in every
    /// pair (the words after `--` take its place).
    #[arg(long, env = "AWCONF_CONTROLLER_COMMAND", value_name = "LINE")]
    controller_command: Option<String>,
    /// Pairs run at once (each starts a cluster, Kueue and the controller of its own).
    #[arg(
        long,
        env = "AWCONF_MATRIX_JOBS",
        value_name = "N",
        default_value_t = 1
    )]
    jobs: usize,
    /// Directory for each pair's report directory, its log and the matrix (index.html).
    #[arg(
        long,
        env = "AWCONF_MATRIX_DIR",
        value_name = "DIR",
        default_value = "awconf-matrix"
    )]
    report: PathBuf,
    /// A cucumber tag expression, for every pair.
    #[arg(long, env = "AWCONF_TAGS")]
    tags: Option<String>,
    /// Run a failed scenario again, up to N times, in every pair.
    #[arg(long, env = "AWCONF_RETRIES", value_name = "N", default_value_t = 0)]
    retries: usize,
    /// A directory of your own *.feature files, run beside the built-in features.
    #[arg(long, env = "AWCONF_FEATURES", value_name = "DIR")]
    features: Option<PathBuf>,
    /// A directory of your own *.feature files, run instead of the built-in features.
    #[arg(long, env = "AWCONF_ONLY_FEATURES", value_name = "DIR")]
    only_features: Option<PathBuf>,
    /// Run only scenarios whose `feature: scenario` title contains one of these.
    filters: Vec<String>,
    /// For `--controller external`: the command that runs your controller, in every pair, as
    /// `awconf run` takes it (one word is a shell line, more are run as they are).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// One cell of the matrix: a Kueue release on a Kubernetes release.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub kueue: String,
    pub kubernetes: String,
}

impl Pair {
    /// Its report directory's name under the matrix's.
    pub fn dir_name(&self) -> String {
        format!("kueue-{}_kubernetes-{}", self.kueue, self.kubernetes)
    }

    pub fn label(&self) -> String {
        format!("Kueue {} · Kubernetes {}", self.kueue, self.kubernetes)
    }
}

/// How one pair's run ended.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    /// It wrote its results: the counts.
    Ran(RunCounts),
    /// It ended without results (its exit code, and what its log says last).
    NoResults {
        code: Option<i32>,
        last_lines: String,
    },
}

impl MatrixArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let pairs = self.pairs()?;
        let mut plans = Vec::new();
        for pair in &pairs {
            let options = self.options(pair)?;
            // A bad tag, filter or feature file stops here, before any build or cluster.
            let plan = Plan::prepare(&options)?;
            anyhow::ensure!(
                !plan.selected().is_empty(),
                "no scenario matches {}; `awconf features list` shows the features",
                plan.selection.describe()
            );
            plans.push((options, plan));
        }
        std::fs::create_dir_all(&self.report)
            .with_context(|| format!("creating {}", self.report.display()))?;
        self.build_toolchain(&plans)?;

        let started = Instant::now();
        let outcomes = self.run_pairs(&pairs)?;
        let runs: Vec<(String, PathBuf)> = pairs
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| matches!(o, Outcome::Ran(_)))
            .map(|(p, _)| (p.label(), self.report.join(p.dir_name())))
            .collect();
        let page = self.report.join("index.html");
        let comparison = if runs.is_empty() {
            None
        } else {
            Some(compare::compare_labeled(&runs, &page)?)
        };

        println!();
        for line in table(&pairs, &outcomes) {
            println!("{line}");
        }
        if let Some(c) = &comparison {
            println!();
            for line in &c.differences {
                println!("{line}");
            }
            println!(
                "{}: {} scenarios × {} pairs, {} differ; {:.0}s",
                page.display(),
                c.scenarios,
                c.runs,
                c.differing,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(exit(&outcomes).into())
    }

    fn pairs(&self) -> anyhow::Result<Vec<Pair>> {
        let or_pinned = |given: &[String], pinned: &[&str]| -> Vec<String> {
            if given.is_empty() {
                pinned.iter().map(|s| s.to_string()).collect()
            } else {
                given.iter().map(|s| s.trim().to_string()).collect()
            }
        };
        let kueue = or_pinned(&self.kueue, toolchain::KUEUE_PINNED);
        let kubernetes = or_pinned(&self.kubernetes, toolchain::KUBERNETES_PINNED);
        for k in &kueue {
            clusters::kueue::KueueVersion::parse(k).map_err(|e| anyhow::anyhow!("--kueue: {e}"))?;
        }
        for k in &kubernetes {
            toolchain::kubernetes_release(k).map_err(|e| anyhow::anyhow!("--kubernetes: {e}"))?;
        }
        anyhow::ensure!(self.jobs >= 1, "--jobs: at least 1");
        anyhow::ensure!(
            matches!(
                self.controller,
                ControllerArg::Embedded
                    | ControllerArg::Process
                    | ControllerArg::Reference
                    | ControllerArg::External
            ),
            "--controller: a matrix runs each pair on a local cluster of its own, so the \
             controller is embedded, process, reference or external"
        );
        anyhow::ensure!(
            self.controller != ControllerArg::External
                || !self.command.is_empty()
                || self.controller_command.is_some(),
            "--controller external needs the controller's command: the words after `--`, or \
             --controller-command LINE"
        );
        let mut pairs = Vec::new();
        for k in &kueue {
            for v in &kubernetes {
                let pair = Pair {
                    kueue: k.clone(),
                    kubernetes: v.clone(),
                };
                anyhow::ensure!(!pairs.contains(&pair), "{} is given twice", pair.label());
                pairs.push(pair);
            }
        }
        Ok(pairs)
    }

    /// The flags of a pair's `awconf run`, without the subcommand's name.
    fn run_flags(&self, pair: &Pair) -> Vec<String> {
        let mut args: Vec<String> = [
            "--cluster",
            "local",
            "--controller",
            &crate::cli::run::value_name(self.controller),
            "--kueue",
            &pair.kueue,
            "--kubernetes",
            &pair.kubernetes,
            "--retries",
            &self.retries.to_string(),
            "--report",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(self.report.join(pair.dir_name()).display().to_string());
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                args.extend([name.to_string(), value]);
            }
        };
        flag("--tags", self.tags.clone());
        flag(
            "--features",
            self.features.as_ref().map(|d| d.display().to_string()),
        );
        flag(
            "--only-features",
            self.only_features.as_ref().map(|d| d.display().to_string()),
        );
        flag("--controller-command", self.controller_command.clone());
        args.extend(self.filters.iter().cloned());
        if !self.command.is_empty() {
            args.push("--".into());
            args.extend(self.command.iter().cloned());
        }
        args
    }

    /// What `awconf run` makes of a pair's arguments, as the pair's run will.
    fn options(&self, pair: &Pair) -> anyhow::Result<SuiteOptions> {
        let args = self.run_flags(pair);
        let flags: Vec<&str> = args.iter().map(String::as_str).collect();
        args_alone::parse::<RunArgs>(&flags)?
            .options(SuiteOptions::default())
            .with_context(|| pair.label())
    }

    /// Every pair's binaries, built before the first pair starts so that pairs run at once
    /// do not build the same release twice.
    fn build_toolchain(&self, plans: &[(SuiteOptions, Plan)]) -> anyhow::Result<()> {
        let mut needed: Vec<Component> = Vec::new();
        for (options, plan) in plans {
            let from = match options.kueue_upgrade().map_err(anyhow::Error::msg)? {
                KueueUpgrade::From { from, .. } if plan.selects_tagged(KUEUE_UPGRADE_TAG) => {
                    Some(from)
                }
                _ => None,
            };
            let controller_from = match options.controller_upgrade() {
                ControllerUpgrade::From(from) if plan.selects_tagged(CONTROLLER_UPGRADE_TAG) => {
                    Some(from)
                }
                _ => None,
            };
            for c in conformance_steps::environment::prebuild::needed(
                options,
                from,
                controller_from.as_ref(),
            ) {
                if !needed.iter().any(|n| n.to_string() == c.to_string()) {
                    needed.push(c);
                }
            }
        }
        // Longest first: Kubernetes, then Kueue, then the rest.
        needed.sort_by_key(|c| {
            let name = c.to_string();
            if name.starts_with("kubernetes") {
                0
            } else if name.starts_with("kueue") {
                1
            } else {
                2
            }
        });
        let cache = toolchain::cache_dir();
        let missing: Vec<String> = needed
            .iter()
            .filter(|c| !c.is_built(&cache))
            .map(|c| c.to_string())
            .collect();
        if !missing.is_empty() {
            println!("awconf: building first: {}", missing.join(", "));
            toolchain::build_all(&needed, &cache).context("building the matrix's toolchain")?;
        }
        Ok(())
    }

    fn run_pairs(&self, pairs: &[Pair]) -> anyhow::Result<Vec<Outcome>> {
        let exe = std::env::current_exe().context("finding this awconf executable")?;
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let outcomes: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; pairs.len()]);
        let failed_to_start: Mutex<Option<anyhow::Error>> = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.min(pairs.len()) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(pair) = pairs.get(i) else { break };
                        println!("awconf: {} started", pair.label());
                        let started = Instant::now();
                        match self.run_pair(&exe, pair) {
                            Ok(outcome) => {
                                let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                                println!(
                                    "awconf: [{n}/{}] {}: {} ({:.0}s)",
                                    pairs.len(),
                                    pair.label(),
                                    outcome.describe(),
                                    started.elapsed().as_secs_f64()
                                );
                                if let Ok(mut o) = outcomes.lock() {
                                    o[i] = Some(outcome);
                                }
                            }
                            Err(e) => {
                                if let Ok(mut f) = failed_to_start.lock() {
                                    f.get_or_insert(e);
                                }
                                break;
                            }
                        }
                    }
                });
            }
        });
        if let Some(e) = failed_to_start.into_inner().ok().flatten() {
            return Err(e);
        }
        Ok(outcomes
            .into_inner()
            .unwrap_or_default()
            .into_iter()
            .map(|o| {
                o.unwrap_or(Outcome::NoResults {
                    code: None,
                    last_lines: String::new(),
                })
            })
            .collect())
    }

    /// Runs one pair as `awconf run`, its output into the pair's `run.log`.
    fn run_pair(&self, exe: &Path, pair: &Pair) -> anyhow::Result<Outcome> {
        let dir = self.report.join(pair.dir_name());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // A results.json left from an earlier matrix must not stand for this run.
        let _ = std::fs::remove_file(dir.join(conformance_steps::report::results::FILE));
        let log_path = dir.join("run.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let status = Command::new(exe)
            .arg("run")
            .args(self.run_flags(pair))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()
            .with_context(|| format!("starting {}", exe.display()))?;
        Ok(
            match conformance_steps::report::results::RunResults::read(&dir) {
                Ok(results) => Outcome::Ran(RunCounts::of(&results)),
                Err(_) => Outcome::NoResults {
                    code: status.code(),
                    last_lines: last_lines(&log_path, 3),
                },
            },
        )
    }
}

impl Outcome {
    fn describe(&self) -> String {
        match self {
            Outcome::Ran(c) => c.closing_line(),
            Outcome::NoResults { code, last_lines } => format!(
                "no results (exit {}): {}",
                code.map_or("by signal".to_string(), |c| c.to_string()),
                last_lines.replace('\n', " | ")
            ),
        }
    }
}

/// The compact table: pair, passed, failed, skipped.
fn table(pairs: &[Pair], outcomes: &[Outcome]) -> Vec<String> {
    let width = pairs
        .iter()
        .map(|p| p.label().chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut lines = vec![format!(
        "{:<width$}  {:>6}  {:>6}  {:>7}",
        "pair", "passed", "failed", "skipped"
    )];
    for (pair, outcome) in pairs.iter().zip(outcomes) {
        lines.push(match outcome {
            Outcome::Ran(c) => format!(
                "{:<width$}  {:>6}  {:>6}  {:>7}",
                pair.label(),
                c.passed,
                c.failed,
                c.skipped
            ),
            other => format!("{:<width$}  {}", pair.label(), other.describe()),
        });
    }
    lines
}

/// Any pair without results is the environment's failure; else any failed scenario fails.
fn exit(outcomes: &[Outcome]) -> Exit {
    if outcomes
        .iter()
        .any(|o| matches!(o, Outcome::NoResults { .. }))
    {
        Exit::Environment
    } else if outcomes
        .iter()
        .any(|o| matches!(o, Outcome::Ran(c) if c.failed > 0))
    {
        Exit::Failed
    } else {
        Exit::Passed
    }
}

fn last_lines(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args_alone::parse;
    use conformance_steps::options::ExternalCommand;

    fn args(words: &[&str]) -> anyhow::Result<MatrixArgs> {
        Ok(parse(words)?)
    }

    #[test]
    fn the_pairs_are_every_kueue_on_every_kubernetes() {
        let m = args(&[
            "--kueue",
            "v0.18.4,v0.19.2",
            "--kubernetes",
            "v1.35.4,v1.37.2",
        ])
        .unwrap();
        let labels: Vec<String> = m.pairs().unwrap().iter().map(Pair::label).collect();
        assert_eq!(
            labels,
            [
                "Kueue v0.18.4 · Kubernetes v1.35.4",
                "Kueue v0.18.4 · Kubernetes v1.37.2",
                "Kueue v0.19.2 · Kubernetes v1.35.4",
                "Kueue v0.19.2 · Kubernetes v1.37.2"
            ]
        );
        let all = args(&[]).unwrap().pairs().unwrap();
        assert_eq!(
            all.len(),
            toolchain::KUEUE_PINNED.len() * toolchain::KUBERNETES_PINNED.len()
        );
    }

    #[test]
    fn each_pair_runs_with_its_versions_and_its_own_report_directory() {
        let m = args(&[
            "--kueue",
            "v0.18.4",
            "--kubernetes",
            "v1.35.4",
            "--report",
            "out",
            "--controller",
            "reference",
            "--tags",
            "@kueue",
            "upgrade",
        ])
        .unwrap();
        let pair = &m.pairs().unwrap()[0];
        let options = m.options(pair).unwrap();
        assert_eq!(options.kubernetes, "v1.35.4");
        assert_eq!(options.kueue.label(), "v0.18.4");
        assert_eq!(
            options.report_dir,
            Path::new("out/kueue-v0.18.4_kubernetes-v1.35.4")
        );
        assert_eq!(options.tags.as_deref(), Some("@kueue"));
        assert_eq!(options.filters, ["upgrade"]);
        assert!(matches!(
            options.controller,
            conformance_steps::ControllerMode::Reference { .. }
        ));
    }

    #[test]
    fn an_external_controller_s_command_reaches_every_pair() {
        let words = ["--kueue", "v0.18.4,v0.19.2", "--kubernetes", "v1.36.3"];
        let argv = [
            &words[..],
            &[
                "--controller",
                "external",
                "Phases:",
                "--",
                "bin/manager",
                "{kubeconfig}",
            ],
        ]
        .concat();
        let line = [
            &words[..],
            &[
                "--controller",
                "external",
                "--controller-command",
                "a && exec b",
            ],
        ]
        .concat();
        for (m, want) in [
            (
                args(&argv).unwrap(),
                ExternalCommand::Argv(vec!["bin/manager".into(), "{kubeconfig}".into()]),
            ),
            (
                args(&line).unwrap(),
                ExternalCommand::Shell("a && exec b".into()),
            ),
        ] {
            let pairs = m.pairs().unwrap();
            assert_eq!(pairs.len(), 2);
            for pair in &pairs {
                let options = m.options(pair).unwrap();
                assert_eq!(
                    options.controller,
                    conformance_steps::ControllerMode::External {
                        command: want.clone()
                    },
                    "{}",
                    pair.label()
                );
                assert_eq!(options.kueue.label(), pair.kueue);
            }
        }
        let filtered = args(&argv).unwrap();
        let options = filtered.options(&filtered.pairs().unwrap()[0]).unwrap();
        assert_eq!(options.filters, ["Phases:"]);
    }

    #[test]
    fn bad_versions_and_controllers_stop_before_anything_runs() {
        let table: &[(&[&str], &str)] = &[
            (
                &["--kueue", "v0.19"],
                "--kueue: \"v0.19\" is not a Kueue version",
            ),
            (&["--kubernetes", "1.36"], "--kubernetes: "),
            (
                &["--controller", "in-cluster"],
                "embedded, process, reference or external",
            ),
            (
                &["--controller", "external"],
                "--controller external needs the controller's command",
            ),
            (&["--kueue", "v0.19.2,v0.19.2"], "given twice"),
            (&["--jobs", "0"], "--jobs: at least 1"),
        ];
        for (words, want) in table {
            let e = args(words).and_then(|m| m.pairs()).unwrap_err();
            assert!(format!("{e:#}").contains(want), "{words:?}: {e:#}");
        }
    }

    #[test]
    fn the_exit_code_says_the_worst_pair() {
        let ran = |failed| {
            Outcome::Ran(RunCounts {
                passed: 3,
                failed,
                flaky: 0,
                skipped: 1,
            })
        };
        let none = Outcome::NoResults {
            code: Some(3),
            last_lines: "error: etcd did not start".into(),
        };
        assert_eq!(exit(&[ran(0), ran(0)]), Exit::Passed);
        assert_eq!(exit(&[ran(0), ran(2)]), Exit::Failed);
        assert_eq!(exit(&[ran(2), none.clone()]), Exit::Environment);
        let pairs = [
            Pair {
                kueue: "v0.19.2".into(),
                kubernetes: "v1.36.3".into(),
            },
            Pair {
                kueue: "v0.17.0".into(),
                kubernetes: "v1.36.3".into(),
            },
        ];
        let lines = table(&pairs, &[ran(1), none]);
        assert_eq!(
            lines,
            [
                "pair                                passed  failed  skipped",
                "Kueue v0.19.2 · Kubernetes v1.36.3       3       1        1",
                "Kueue v0.17.0 · Kubernetes v1.36.3  no results (exit 3): error: etcd did not start"
            ]
        );
    }
}
