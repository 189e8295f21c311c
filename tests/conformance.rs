//! The conformance suite under `cargo test`: the features in `features/` on the embedded
//! cluster with the real Kueue manager and the controller under test.
//!
//! `cargo test --test conformance -- [--tags EXPR]
//! [--controller embedded|process|external|reference] [--controller-command CMD]
//! [--appwrapper-version vX.Y.Z] [--kueue-version vX.Y.Z] [--report-dir DIR] [--junit FILE]
//! [--concurrency N] [--keep-on-failure]`; the same settings can come from the `AWCONF_*`
//! variables of `SuiteOptions::from_env`. Ends with the line `N passed, N failed` and exits
//! non-zero if a scenario failed.

use std::path::PathBuf;
use std::process::ExitCode;

use conformance_steps::{ControllerMode, SuiteOptions, run_suite};

fn options() -> Result<SuiteOptions, String> {
    let mut options = SuiteOptions::from_env()?;
    let mut args = std::env::args().skip(1);
    let mut mode: Option<String> = None;
    let mut command: Option<String> = None;
    let mut reference_version: Option<String> = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--tags" | "-t" => options.tags = Some(value(&arg)?),
            "--controller" => mode = Some(value(&arg)?),
            "--controller-command" => command = Some(value(&arg)?),
            "--appwrapper-version" => reference_version = Some(value(&arg)?),
            "--kueue-version" => options.kueue_version = value(&arg)?,
            "--report-dir" => options.report_dir = PathBuf::from(value(&arg)?),
            "--junit" => options.junit = Some(PathBuf::from(value(&arg)?)),
            "--features" => options.features = PathBuf::from(value(&arg)?),
            "--concurrency" | "-c" => {
                options.concurrency = value(&arg)?
                    .parse()
                    .map_err(|_| "--concurrency needs a number")?
            }
            "--keep-on-failure" => options.keep_on_failure = true,
            // Flags cargo or IDEs pass to test binaries.
            "--nocapture" | "--quiet" | "-q" | "--show-output" => {}
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if let Some(mode) = mode {
        options.controller = ControllerMode::parse(&mode, command, None)?;
    }
    options.controller = options.controller.with_reference_version(reference_version);
    Ok(options)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    conformance_steps::logging::init(&options.report_dir);
    match run_suite(options).await {
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
