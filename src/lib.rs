//! The `awconf` command line as a library: `main.rs` runs it, and the suite's `cargo test`
//! binaries (`tests/conformance*.rs`) read the run's flags with the same [`cli::run::RunArgs`].

pub mod cli;
