//! The conformance suite under `cargo test`: the features in `features/` on the embedded
//! cluster with the real Kueue manager and our controller (embedded unless `--controller` or
//! `AWCONF_CONTROLLER` says otherwise). It takes `awconf run`'s flags and variables (see
//! `awconf run --help`), with reports under `target/awconf-report`. Ends with the line
//! `N passed, N failed` and exits non-zero if a scenario failed.

use awconf::cli::cargo_test::TestBinary;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    TestBinary {
        name: "conformance",
        controller: None,
    }
    .main(|options| options)
    .await
}
