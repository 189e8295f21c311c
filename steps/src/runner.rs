//! The suite as a `harness = false` test binary: `tests/conformance.rs` (our controller) and
//! `tests/conformance_reference.rs` (the reference operator) are one call each.
//!
//! Arguments: `[FILTER...] [--tags EXPR] [--controller embedded|process|external|reference]
//! [--controller-command CMD] [--appwrapper-version vX.Y.Z] [--kueue-version vX.Y.Z]
//! [--report-dir DIR] [--junit FILE] [--features DIR | --only-features DIR] [--retries N]
//! [--concurrency N] [--keep-on-failure]`; the same settings can come from the `AWCONF_*`
//! variables of [`SuiteOptions::from_env`].
//!
//! `cargo test --workspace NAME` hands NAME to these binaries too: when no scenario matches
//! the filters, they say so and pass without starting anything.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::{ControllerMode, FeatureSet, Plan, SuiteOptions, run_plan};

const FLAGS: &[&str] = &[
    "--tags",
    "--controller",
    "--controller-command",
    "--appwrapper-version",
    "--kueue-version",
    "--kueue-upgrade-from",
    "--report-dir",
    "--junit",
    "--features",
    "--only-features",
    "--retries",
    "--concurrency",
    "--keep-on-failure",
];

/// Parses the test binary's arguments over `options`; a plain argument is a scenario-name
/// filter (`cargo test --test conformance -- "Suspending"`).
pub fn parse_args(
    mut options: SuiteOptions,
    args: impl IntoIterator<Item = String>,
) -> Result<SuiteOptions, String> {
    let mut args = args.into_iter();
    let mut mode: Option<String> = None;
    let mut command: Option<String> = None;
    let mut reference_version: Option<String> = None;
    let mut extra_features: Option<PathBuf> = None;
    let mut only_features: Option<PathBuf> = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--tags" | "-t" => options.tags = Some(value(&arg)?),
            "--controller" => mode = Some(value(&arg)?),
            "--controller-command" => command = Some(value(&arg)?),
            "--appwrapper-version" => reference_version = Some(value(&arg)?),
            "--kueue-version" => {
                options.kueue = clusters::kueue::KueueSource::release(&value(&arg)?)?
            }
            "--kueue-upgrade-from" => {
                options.kueue_upgrade_from = Some(crate::options::parse_upgrade_from(
                    "--kueue-upgrade-from",
                    &value(&arg)?,
                )?)
            }
            "--report-dir" => options.report_dir = PathBuf::from(value(&arg)?),
            "--junit" => options.junit = Some(PathBuf::from(value(&arg)?)),
            "--features" => extra_features = Some(PathBuf::from(value(&arg)?)),
            "--only-features" => only_features = Some(PathBuf::from(value(&arg)?)),
            "--retries" => {
                options.retries = value(&arg)?
                    .parse()
                    .map_err(|_| "--retries needs a number")?
            }
            "--concurrency" | "-c" => {
                options.concurrency = value(&arg)?
                    .parse()
                    .map_err(|_| "--concurrency needs a number")?
            }
            "--keep-on-failure" => options.keep_on_failure = true,
            // Flags cargo or IDEs pass to test binaries.
            "--nocapture" | "--quiet" | "-q" | "--show-output" | "--exact" => {}
            flag if flag.starts_with('-') => {
                return Err(format!(
                    "unknown flag {flag:?}; accepted: {}, and scenario-name filters",
                    FLAGS.join(" ")
                ));
            }
            filter => options.filters.push(filter.to_string()),
        }
    }
    if let Some(mode) = mode {
        options.controller = ControllerMode::parse(
            &mode,
            command.map(crate::options::ExternalCommand::Shell),
            None,
        )?;
    }
    options.controller = options.controller.with_reference_version(reference_version);
    if extra_features.is_some() || only_features.is_some() {
        options.features = FeatureSet::from_dirs(extra_features, only_features)?;
    }
    options.kueue_upgrade()?;
    Ok(options)
}

/// Runs the suite with the environment's and the command line's settings over `defaults`
/// (which may pick the controller and the report directory); prints the summary, ending
/// with `N passed, N failed`. Bad settings or feature files exit with 2 before anything
/// starts; so does nothing, successfully, when no scenario matches the filters.
pub async fn main(defaults: impl FnOnce(SuiteOptions) -> SuiteOptions) -> ExitCode {
    let options = SuiteOptions::from_env()
        .map(defaults)
        .and_then(|o| parse_args(o, std::env::args().skip(1)));
    let options = match options {
        Ok(o) => o,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let plan = match Plan::prepare(&options) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("conformance: {e:#}");
            return ExitCode::from(2);
        }
    };
    if plan.selected().is_empty() {
        println!("{}", nothing_selected(&plan));
        return ExitCode::SUCCESS;
    }
    crate::logging::init(&options.report_dir);
    let outcome = run_plan(options, plan).await;
    // The process ends next: its shared cluster's directory goes with it.
    clusters::local::release_shared();
    match outcome {
        Ok(summary) => {
            println!();
            for line in summary.report_lines() {
                println!("{line}");
            }
            if summary.success() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("conformance: {e:#}");
            println!("0 passed, 1 failed");
            ExitCode::FAILURE
        }
    }
}

/// The closing line of a run that selected no scenario (under `cargo test`, the filter was
/// most likely meant for another test).
pub fn nothing_selected(plan: &Plan) -> String {
    format!(
        "0 passed, 0 failed (no scenario matches {})",
        plan.selection.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_reference_and_its_version_come_from_the_command_line() {
        let options = parse_args(
            SuiteOptions::default(),
            args(&[
                "--controller",
                "reference",
                "--appwrapper-version",
                "v1.2.1",
            ]),
        )
        .unwrap();
        assert_eq!(
            options.controller,
            ControllerMode::Reference {
                version: "v1.2.1".into()
            }
        );
    }

    #[test]
    fn plain_arguments_filter_scenarios_by_name() {
        let options = parse_args(
            SuiteOptions::default(),
            args(&["Suspending", "--tags", "@x"]),
        )
        .unwrap();
        assert_eq!(options.filters, vec!["Suspending".to_string()]);
        assert_eq!(options.tags.as_deref(), Some("@x"));
    }

    #[test]
    fn feature_directories_and_retries_come_from_the_command_line() {
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
        for (list, features, retries) in table {
            let options = parse_args(SuiteOptions::default(), args(list)).unwrap();
            assert_eq!(&options.features, features, "{list:?}");
            assert_eq!(options.retries, *retries, "{list:?}");
        }
        let from_env = SuiteOptions {
            features: FeatureSet::BuiltInAnd("env".into()),
            ..SuiteOptions::default()
        };
        let options = parse_args(from_env, args(&["--only-features", "mine"])).unwrap();
        assert_eq!(options.features, FeatureSet::Only("mine".into()));
        for bad in [
            &["--features", "a", "--only-features", "b"][..],
            &["--retries", "many"],
        ] {
            assert!(
                parse_args(SuiteOptions::default(), args(bad)).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_unit_test_name_selects_no_scenario_and_starts_nothing() {
        let options = parse_args(
            SuiteOptions::default(),
            args(&["report::junit::tests::escape", "--exact"]),
        )
        .unwrap();
        let plan = Plan::prepare(&options).unwrap();
        assert!(plan.selected().is_empty());
        assert_eq!(
            nothing_selected(&plan),
            r#"0 passed, 0 failed (no scenario matches the name filter "report::junit::tests::escape")"#
        );
        let all = Plan::prepare(&SuiteOptions::default()).unwrap();
        assert!(all.selected().len() > 80, "{}", all.selected().len());
    }

    #[test]
    fn the_upgrade_start_comes_from_the_command_line_and_must_be_older() {
        let options = parse_args(
            SuiteOptions::default(),
            args(&["--kueue-upgrade-from", "v0.17.8"]),
        )
        .unwrap();
        assert_eq!(
            options.kueue_upgrade_from,
            Some(clusters::kueue::KueueVersion(0, 17, 8))
        );
        let table: &[(&[&str], &str)] = &[
            (
                &["--kueue-upgrade-from", "main"],
                "--kueue-upgrade-from: \"main\" is not a Kueue version",
            ),
            (
                &[
                    "--kueue-version",
                    "v0.19.2",
                    "--kueue-upgrade-from",
                    "v0.19.2",
                ],
                "not older than the Kueue under test v0.19.2",
            ),
            (&["--kueue-upgrade-from"], "needs a value"),
        ];
        for (list, want) in table {
            let e = parse_args(SuiteOptions::default(), args(list)).unwrap_err();
            assert!(e.contains(want), "{list:?}: {e}");
        }
    }

    #[test]
    fn unknown_arguments_and_missing_values_are_refused() {
        let error = parse_args(SuiteOptions::default(), args(&["--bogus"])).unwrap_err();
        assert!(
            error.contains("--tags") && error.contains("--controller"),
            "{error}"
        );
        assert!(parse_args(SuiteOptions::default(), args(&["--tags"])).is_err());
    }
}
