//! `awconf report`: what can be made of report directories after their runs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use conformance_steps::report::results::RunResults;
use conformance_steps::report::{compare, summary};

#[derive(Subcommand)]
pub enum ReportCommand {
    /// The conformance matrix of several runs: one row per scenario, one column per report
    /// directory (read through its results.json), each cell linked to the scenario's page.
    Compare {
        /// Report directories of `awconf run --report DIR`.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// The HTML page to write.
        #[arg(long, short, default_value = "conformance-matrix.html")]
        output: PathBuf,
    },
    /// A run's results as GitHub-flavoured Markdown for a CI job's summary (append it to
    /// $GITHUB_STEP_SUMMARY): the closing line, each feature's verdict and counts, and each
    /// failed scenario with its first mismatch.
    Summary {
        /// The report directory of `awconf run --report DIR` (read through its results.json).
        dir: PathBuf,
        /// The heading.
        #[arg(long, default_value = "AppWrapper conformance")]
        title: String,
    },
}

impl ReportCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            ReportCommand::Compare { dirs, output } => {
                let c = compare::compare(&dirs, &output)?;
                println!(
                    "{}: {} scenarios × {} runs, {} differ",
                    output.display(),
                    c.scenarios,
                    c.runs,
                    c.differing
                );
                Ok(ExitCode::SUCCESS)
            }
            ReportCommand::Summary { dir, title } => {
                let results = RunResults::read(&dir)?;
                print!("{}", summary::render(&title, &results));
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}
