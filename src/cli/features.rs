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
        }
        Ok(ExitCode::SUCCESS)
    }
}
