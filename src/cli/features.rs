//! `awconf features`: the built-in features listed or written out, and a user's checked.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use conformance_steps::FeatureSet;
use conformance_steps::features::{self, InvalidFeatures};

#[derive(Subcommand)]
pub enum FeaturesCommand {
    /// Each feature with its number of scenarios (an outline counts once per example), and
    /// the total.
    List(FeatureDirs),
    /// Write the built-in features into DIR (files of the same names are overwritten).
    Export {
        /// Where to write them; created if need be.
        dir: PathBuf,
    },
    /// Parse the features and check every step against the step definitions, as `awconf run`
    /// does before it starts anything.
    Check(FeatureDirs),
    /// Every step definition with where its code is; with TEXT, the definitions a step's text
    /// matches (its keyword may be left on), or the closest ones when none does.
    Steps {
        /// A step as a feature writes it, e.g. `And it reaches phase Running within 30 seconds`.
        text: Vec<String>,
    },
}

/// The features to read, as `awconf run` takes them.
#[derive(Args)]
pub struct FeatureDirs {
    /// A directory of your own *.feature files, beside the built-in features.
    #[arg(long, value_name = "DIR", conflicts_with = "only_features")]
    features: Option<PathBuf>,
    /// A directory of your own *.feature files, instead of the built-in features.
    #[arg(long, value_name = "DIR")]
    only_features: Option<PathBuf>,
}

impl FeatureDirs {
    fn set(self) -> anyhow::Result<FeatureSet> {
        FeatureSet::from_dirs(self.features, self.only_features).map_err(anyhow::Error::msg)
    }
}

impl FeaturesCommand {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            FeaturesCommand::List(dirs) => {
                let (features, problems) = features::load(&dirs.set()?);
                if !problems.is_empty() {
                    return Err(InvalidFeatures(problems).into());
                }
                for line in features::listing(&features) {
                    println!("{line}");
                }
            }
            FeaturesCommand::Export { dir } => {
                for path in features::export(&dir)? {
                    println!("{}", path.display());
                }
            }
            FeaturesCommand::Check(dirs) => {
                let checked = features::load_checked(&dirs.set()?)?;
                println!(
                    "{} feature files parse and every step has a definition",
                    checked.len()
                );
            }
            FeaturesCommand::Steps { text } => return Ok(steps(&text.join(" "))),
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// `awconf features steps [TEXT]`: 1 when TEXT matches no definition.
fn steps(text: &str) -> ExitCode {
    let definitions = features::registered();
    if text.is_empty() {
        for d in &definitions {
            println!(
                "{:<5} {}  {}",
                features::keyword_name(d.keyword),
                d.regex,
                d.location
            );
        }
        return ExitCode::SUCCESS;
    }
    let found = features::matching(text, &definitions);
    for d in &found {
        println!(
            "{}  {} {}",
            d.location,
            features::keyword_name(d.keyword),
            d.regex
        );
    }
    if !found.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!("awconf: no step definition matches {text:?}; the closest:");
    for suggestion in features::suggestions(text, &definitions) {
        eprintln!("  {suggestion}");
    }
    ExitCode::FAILURE
}
