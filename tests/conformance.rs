//! The conformance suite under `cargo test`: the features in `features/` on the embedded
//! cluster with the real Kueue manager and our controller (embedded unless `--controller` or
//! `AWCONF_CONTROLLER` says otherwise). Arguments: see `conformance_steps::runner`. Ends
//! with the line `N passed, N failed` and exits non-zero if a scenario failed.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    conformance_steps::runner::main(|options| options).await
}
