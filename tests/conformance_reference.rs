//! The same suite on the reference Go operator (built from its pinned module on first use):
//! the suite is a specification only if an independent implementation passes it.
//! `@extension` scenarios, our deliberate differences, are skipped and counted.

use awconf::cli::cargo_test::TestBinary;
use awconf::cli::run::ControllerArg;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    TestBinary {
        name: "conformance_reference",
        controller: Some(ControllerArg::Reference),
    }
    .main(|mut options| {
        options.report_dir = options.report_dir.join("reference");
        options
    })
    .await
}
