//! `awconf features`: the built-in features listed or written out, and a user's checked.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use conformance_steps::FeatureSet;
use conformance_steps::features::{self, InvalidFeatures};
use conformance_steps::spec;
use conformance_steps::steps::registry;

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
    /// Parse the features and check every step against the step definitions and every
    /// `@behaviour:ID` tag against the specification, as `awconf run` does before it starts
    /// anything; with the built-in features, also that every behaviour is checked by a
    /// scenario or says why none does.
    Check(FeatureDirs),
    /// Every step definition with where its code is; with TEXT, the one a step's whole text
    /// matches (its keyword may be left on), else those that say TEXT, else the closest.
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
                super::listing::print(features::listing(&features))?;
            }
            FeaturesCommand::Export { dir } => {
                for path in features::export(&dir)? {
                    println!("{}", path.display());
                }
            }
            FeaturesCommand::Check(dirs) => {
                let set = dirs.set()?;
                let checked = features::load_checked(&set, &registry::registered())?;
                println!(
                    "{} feature files parse, every step has a definition and every behaviour tag \
                     names a behaviour of {}",
                    checked.len(),
                    spec::PATH
                );
                if set.includes_built_in() {
                    let (built_in, _) = features::load(&FeatureSet::BuiltIn);
                    let counts = spec::Counts::of(
                        spec::built_in().behaviours().map(|(_, b)| b),
                        &spec::by_behaviour(&built_in),
                    );
                    println!("{counts}");
                }
            }
            FeaturesCommand::Steps { text } => return steps(&text.join(" ")),
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// `awconf features steps [TEXT]`: the definitions TEXT matches as a whole step, else those
/// whose phrases contain it; 1 when there are none.
fn steps(text: &str) -> anyhow::Result<ExitCode> {
    let definitions = registry::registered();
    let mut found = features::matching(text, &definitions);
    if found.is_empty() {
        found = features::containing(text, &definitions);
    }
    if found.is_empty() {
        eprintln!("awconf: no step definition matches or says {text:?}; the closest:");
        for suggestion in features::suggestions(text, &definitions) {
            eprintln!("  {suggestion}");
        }
        return Ok(ExitCode::FAILURE);
    }
    let width = found.iter().map(|d| phrase(d).len()).max().unwrap_or(0);
    super::listing::print(found.iter().map(|d| {
        format!(
            "{:<5} {:<width$}  {}",
            features::keyword_name(d.keyword),
            phrase(d),
            d.location
        )
    }))?;
    Ok(ExitCode::SUCCESS)
}

/// The shortest way a definition reads.
fn phrase(d: &features::StepDefinition) -> &str {
    d.phrases
        .iter()
        .min_by_key(|p| p.len())
        .map_or(d.regex.as_str(), String::as_str)
}
