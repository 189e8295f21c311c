//! `awconf bench load`: one controller, or ours beside the reference or plain Jobs.

use std::process::ExitCode;

use awconf_bench::figures;
use awconf_bench::stand::Subject;
use clap::{Args, ValueEnum};
use conformance_steps::ControllerMode;

use super::common::{LoadFlags, controller_mode, write_json};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Compare {
    /// The reference operator, on the same plan.
    Reference,
    /// The same pods as plain batch Jobs queued to Kueue: no AppWrapper at all.
    Jobs,
}

#[derive(Args)]
pub struct LoadArgs {
    #[command(flatten)]
    flags: LoadFlags,
    /// The controller under test (default: embedded; process when comparing).
    #[arg(long, value_parser = ["embedded", "process", "reference", "external"])]
    controller: Option<String>,
    /// Run the same plan on these too, one after the other on fresh clusters, and print the
    /// figures side by side.
    #[arg(long, value_enum, value_delimiter = ',')]
    compare: Vec<Compare>,
    /// Run the plan this many times on each (the controllers taking turns, each run on a fresh
    /// cluster) and print each figure's median and range.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    repeat: u16,
    /// For `--controller external`: the command that runs the controller.
    #[arg(last = true)]
    command: Vec<String>,
}

impl LoadArgs {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let settings = self.flags.settings()?;
        let default = if self.compare.is_empty() {
            "embedded"
        } else {
            "process"
        };
        let ours = controller_mode(self.controller.as_deref().unwrap_or(default), &self.command)?;
        let mut subjects = vec![Subject::Controller(ours)];
        for compare in &self.compare {
            subjects.push(match compare {
                Compare::Reference => Subject::Controller(
                    ControllerMode::parse("reference", None, None).map_err(anyhow::Error::msg)?,
                ),
                Compare::Jobs => Subject::PlainJobs,
            });
        }
        subjects.dedup();
        let result = awconf_bench::load(&settings, &subjects, usize::from(self.repeat)).await?;
        println!();
        for line in figures::table_of_repeats(&result.by_subject()) {
            println!("{line}");
        }
        if subjects.len() > 1 {
            println!(
                "(÷: the column's figure divided by the first column's; with --repeat, medians)"
            );
        }
        for run in &result.runs {
            for line in figures::details(run) {
                println!("{line}");
            }
        }
        if let Some(path) = &self.flags.json {
            write_json(path, &result)?;
        }
        println!("seed {}", settings.seed);
        Ok(ExitCode::SUCCESS)
    }
}

#[cfg(test)]
mod tests {
    use super::LoadArgs;
    use crate::cli::args_alone::parse;

    #[test]
    fn repeat_runs_the_plan_at_least_once() {
        for words in [&["--repeat", "3"][..], &[][..]] {
            assert!(parse::<LoadArgs>(words).is_ok(), "{words:?}");
        }
        let e = parse::<LoadArgs>(&["--repeat", "0"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--repeat"), "{e}");
    }
}
