//! The same suite on the reference Go operator (built from its pinned module on first use):
//! the suite is a specification only if an independent implementation passes it.
//! `@extension` scenarios, our deliberate differences, are skipped and counted.

use conformance_steps::ControllerMode;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    conformance_steps::runner::main(|mut options| {
        options.controller = ControllerMode::Reference {
            version: clusters::toolchain::APPWRAPPER_DEFAULT.to_string(),
        };
        options.report_dir = options.report_dir.join("reference");
        options
    })
    .await
}
