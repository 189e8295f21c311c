//! The README's tables of exit codes and environment variables, made from the CLI definition,
//! and the specification's counts: the test fails, printing the text to paste, when the README
//! drifts from `--help` or from `spec/behaviours.yaml` and the features' tags.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli::exit::Exit;

fn exit_codes() -> String {
    let mut table = String::from("| code | meaning |\n|---|---|\n");
    for exit in Exit::ALL {
        table += &format!("| {} | {} |\n", exit as u8, exit.meaning());
    }
    table
}

/// Every `AWCONF_` variable `awconf run` reads, with its flag and the first sentence of the
/// flag's help.
fn environment() -> String {
    let cli = Cli::command();
    let run = cli
        .find_subcommand("run")
        .expect("awconf has a run command");
    let mut table =
        String::from("| variable | flag | default | what it sets |\n|---|---|---|---|\n");
    for arg in run.get_arguments() {
        let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) else {
            continue;
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let first = help
            .split(". ")
            .next()
            .unwrap_or_default()
            .trim_end_matches('.');
        let default: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect();
        table += &format!(
            "| `{}` | `--{long}` | {} | {} |\n",
            env.to_string_lossy(),
            default.join(", "),
            first.replace('\n', " ").replace('|', "\\|")
        );
    }
    table
}

/// The specification's counts, as `awconf features check` prints them.
fn spec_counts() -> String {
    use conformance_steps::{FeatureSet, features, spec};
    let (built_in, _) = features::load(&FeatureSet::BuiltIn);
    let counts = spec::Counts::of(
        spec::built_in().behaviours().map(|(_, b)| b),
        &spec::by_behaviour(&built_in),
    );
    format!("{counts}.\n")
}

/// The text between `<!-- NAME -->` and `<!-- /NAME -->` in the README.
fn section<'a>(readme: &'a str, name: &str) -> &'a str {
    let begin = format!("<!-- {name} -->\n");
    let start = readme
        .find(&begin)
        .unwrap_or_else(|| panic!("README.md has no {begin:?}"))
        + begin.len();
    let end = readme[start..]
        .find(&format!("<!-- /{name} -->"))
        .unwrap_or_else(|| panic!("README.md has no end of {name}"));
    &readme[start..start + end]
}

#[test]
fn the_readme_tables_match_the_cli_and_the_specification() {
    let readme = include_str!("../../README.md");
    for (name, want) in [
        ("exit-codes", exit_codes()),
        ("environment", environment()),
        ("spec-counts", spec_counts()),
    ] {
        assert_eq!(
            section(readme, name),
            want,
            "README.md's {name} table differs from the CLI; paste this:\n{want}"
        );
    }
}
