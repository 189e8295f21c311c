//! One subcommand's flags parsed on their own: what `awconf matrix` makes of a pair's `awconf
//! run`, and each subcommand's tests.

use clap::{Args, Parser};

#[derive(Parser)]
struct Alone<A: Args> {
    #[command(flatten)]
    args: A,
}

/// `words` (the flags after the subcommand's name) parsed as `A`.
pub(crate) fn parse<A: Args>(words: &[&str]) -> Result<A, clap::Error> {
    Alone::<A>::try_parse_from(std::iter::once(&"awconf").chain(words)).map(|alone| alone.args)
}
