//! `awconf spec`: the specification's behaviours with the built-in scenarios that check them.

use std::process::ExitCode;

use clap::Args;
use conformance_steps::FeatureSet;
use conformance_steps::features::{self, InvalidFeatures};
use conformance_steps::spec::{self, Selection};

#[derive(Args)]
pub struct SpecArgs {
    /// Only the behaviours of this area (phases, fault-tolerance, deletion, components,
    /// kueue, webhook, configuration, restart, observability).
    #[arg(long, value_name = "AREA")]
    area: Option<String>,
    /// Print the page spec/README.md is, in Markdown, instead of the listing.
    #[arg(long, conflicts_with_all = ["area", "ids"])]
    markdown: bool,
    /// Only these behaviours, e.g. FT-EXIT-TERMINAL.
    #[arg(value_name = "ID")]
    ids: Vec<String>,
}

impl SpecArgs {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        let (built_in, problems) = features::load(&FeatureSet::BuiltIn);
        if !problems.is_empty() {
            return Err(InvalidFeatures(problems).into());
        }
        let checked = spec::by_behaviour(&built_in);
        if self.markdown {
            print!("{}", spec::markdown(spec::built_in(), &checked));
            return Ok(ExitCode::SUCCESS);
        }
        let selection = Selection {
            area: self.area,
            ids: self.ids,
        };
        match spec::listing(spec::built_in(), &checked, &selection) {
            Ok(lines) => super::listing::print(lines)?,
            Err(e) => {
                eprintln!("awconf: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

#[cfg(test)]
mod tests {
    use super::SpecArgs;
    use crate::cli::args_alone::parse;

    #[test]
    fn spec_takes_an_area_ids_or_markdown() {
        type Case<'a> = (&'a [&'a str], Option<&'a str>, &'a [&'a str], bool);
        let table: &[Case] = &[
            (&[], None, &[], false),
            (&["--area", "deletion"], Some("deletion"), &[], false),
            (
                &["FT-EXIT-TERMINAL", "PH-RESUME"],
                None,
                &["FT-EXIT-TERMINAL", "PH-RESUME"],
                false,
            ),
            (&["--markdown"], None, &[], true),
        ];
        for (words, area, ids, markdown) in table {
            let args: SpecArgs = parse(words).unwrap_or_else(|e| panic!("{words:?}: {e}"));
            assert_eq!(args.area.as_deref(), *area);
            assert_eq!(args.ids, *ids);
            assert_eq!(args.markdown, *markdown);
        }
    }

    #[test]
    fn markdown_goes_alone() {
        assert!(parse::<SpecArgs>(&["--markdown", "--area", "phases"]).is_err());
    }
}
