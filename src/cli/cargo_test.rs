//! The suite as a `harness = false` test binary (`tests/conformance*.rs`): the flags and
//! `AWCONF_*` variables of `awconf run`, read by the same [`RunArgs`], with a test's defaults
//! (reports under `target/`) and the flags cargo passes to every test binary accepted and
//! ignored. `cargo test --workspace NAME` hands NAME to these binaries too: when no scenario
//! matches, they say so and pass without starting anything.

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, Args as _, FromArgMatches as _};
use conformance_steps::SuiteOptions;
use conformance_steps::plan::Plan;
use conformance_steps::suite::run_plan;

use super::exit::Exit;
use super::run::{ControllerArg, RunArgs, report};

/// Flags cargo or an IDE passes to a test binary.
const CARGO_TEST_FLAGS: &[&str] = &["nocapture", "show-output", "exact", "quiet"];

/// One of the suite's test binaries.
pub struct TestBinary {
    pub name: &'static str,
    /// The controller this binary tests, whatever `AWCONF_CONTROLLER` says (a flag still
    /// wins); `None`: `awconf run`'s rule.
    pub controller: Option<ControllerArg>,
}

impl TestBinary {
    fn command(&self) -> clap::Command {
        let mut command = RunArgs::augment_args(clap::Command::new(self.name))
            .mut_arg("report", |a| a.default_value("target/awconf-report"));
        for flag in CARGO_TEST_FLAGS {
            let arg = Arg::new(*flag)
                .long(*flag)
                .action(ArgAction::SetTrue)
                .hide(true);
            command = command.arg(if *flag == "quiet" {
                arg.short('q')
            } else {
                arg
            });
        }
        command
    }

    /// The suite's options from `args` (the binary's name first) and the environment.
    pub fn options<I, T>(&self, args: I) -> anyhow::Result<SuiteOptions>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = self.command().try_get_matches_from(args)?;
        let mut run = RunArgs::from_arg_matches(&matches)?;
        if let Some(controller) = self.controller
            && matches.value_source("controller") != Some(ValueSource::CommandLine)
        {
            run.controller = controller;
        }
        run.options(SuiteOptions::default())
    }

    /// Runs the suite with this process's arguments; `finish` adjusts the options last (a
    /// report subdirectory, a cluster the test brought up). Prints the closing line
    /// `N passed, N failed` in every case, and exits with `awconf run`'s codes.
    pub async fn main(&self, finish: impl FnOnce(SuiteOptions) -> SuiteOptions) -> ExitCode {
        let options = match self.options(std::env::args_os()) {
            Ok(options) => finish(options),
            Err(e) => return self.stop(&e),
        };
        let plan = match Plan::prepare(&options) {
            Ok(plan) => plan,
            Err(e) => return self.stop(&e),
        };
        if plan.selected().is_empty() {
            println!("{}", nothing_selected(&plan));
            return Exit::Passed.into();
        }
        conformance_steps::logging::init(&options.report_dir);
        let outcome = run_plan(options, plan).await;
        // The process ends next: its shared cluster's directory goes with it.
        clusters::providers::local::release_shared();
        match outcome {
            Ok(summary) => {
                println!();
                report(&summary)
            }
            Err(e) => self.stop(&e),
        }
    }

    fn stop(&self, error: &anyhow::Error) -> ExitCode {
        if let Some(clap) = error.downcast_ref::<clap::Error>()
            && !clap.use_stderr()
        {
            // --help: what was asked for, not a failure.
            let _ = clap.print();
            return Exit::Passed.into();
        }
        eprintln!("{}: {error:#}", self.name);
        println!("0 passed, 1 failed");
        Exit::of(error).into()
    }
}

/// The closing line of a run that selected no scenario (under `cargo test`, the filter was
/// most likely meant for another test).
fn nothing_selected(plan: &Plan) -> String {
    format!(
        "0 passed, 0 failed (no scenario matches {})",
        plan.selection.describe()
    )
}

#[cfg(test)]
mod tests {
    use conformance_steps::{ControllerMode, FeatureSet};

    use super::*;

    const CONFORMANCE: TestBinary = TestBinary {
        name: "conformance",
        controller: None,
    };
    const REFERENCE: TestBinary = TestBinary {
        name: "conformance_reference",
        controller: Some(ControllerArg::Reference),
    };

    fn options(binary: &TestBinary, args: &[&str]) -> anyhow::Result<SuiteOptions> {
        binary.options(std::iter::once(binary.name).chain(args.iter().copied()))
    }

    #[test]
    fn a_test_binary_takes_awconf_runs_flags_and_cargos() {
        let o = options(
            &CONFORMANCE,
            &["Suspending", "--tags", "@x", "--nocapture", "-q", "--exact"],
        )
        .unwrap();
        assert_eq!(o.filters, ["Suspending"]);
        assert_eq!(o.tags.as_deref(), Some("@x"));
        assert_eq!(o.report_dir, std::path::Path::new("target/awconf-report"));
        assert_eq!(o.controller, ControllerMode::Embedded);
        let o = options(&CONFORMANCE, &["--only-features", "mine", "--retries", "2"]).unwrap();
        assert_eq!(
            (o.features, o.retries),
            (FeatureSet::Only("mine".into()), 2)
        );
        let e = options(&CONFORMANCE, &["--bogus"]).unwrap_err().to_string();
        assert!(e.contains("--bogus"), "{e}");
    }

    #[test]
    fn the_reference_binary_tests_the_reference_unless_a_flag_says_otherwise() {
        let reference = ControllerMode::Reference {
            version: clusters::toolchain::APPWRAPPER_DEFAULT.into(),
        };
        assert_eq!(options(&REFERENCE, &[]).unwrap().controller, reference);
        let v121 = ControllerMode::Reference {
            version: "v1.2.1".into(),
        };
        assert_eq!(
            options(&REFERENCE, &["--appwrapper-version", "v1.2.1"])
                .unwrap()
                .controller,
            v121
        );
        assert_eq!(
            options(&REFERENCE, &["--controller", "embedded"])
                .unwrap()
                .controller,
            ControllerMode::Embedded
        );
    }

    #[test]
    fn a_unit_test_name_selects_no_scenario_and_starts_nothing() {
        let o = options(&CONFORMANCE, &["report::junit::tests::escape", "--exact"]).unwrap();
        let plan = Plan::prepare(&o).unwrap();
        assert!(plan.selected().is_empty());
        assert_eq!(
            nothing_selected(&plan),
            r#"0 passed, 0 failed (no scenario matches the name filter "report::junit::tests::escape")"#
        );
        let all = Plan::prepare(&options(&CONFORMANCE, &[]).unwrap()).unwrap();
        assert!(all.selected().len() > 80, "{}", all.selected().len());
    }
}
