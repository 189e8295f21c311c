//! The `awconf` command line as a library: `main.rs` runs it, and the suite's `cargo test`
//! binaries (`tests/conformance*.rs`) read the run's flags with the same [`cli::run::RunArgs`].

pub mod cli;

use clap::Parser as _;

/// The `awconf` command: parses the arguments, runs the command on a Tokio runtime and returns
/// its exit code. The runtime lives here rather than in `main.rs` so that the whole command is
/// compiled with this library, which can start before the crates below it have finished.
pub fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    // `awconf run` logs to its report directory instead (see conformance_steps::logging).
    if !cli.is_run() {
        tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_env("AWCONF_LOG")
                    // kube's client logs every failed request as an ERROR; the callers already
                    // report the ones that matter, and under chaos the rest is noise.
                    .unwrap_or_else(|_| "warn,awconf=info,kube_client::client::builder=off".into()),
            )
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return cli::exit::Exit::Environment.into();
        }
    };
    let outcome = runtime.block_on(async {
        let outcome = cli.run().await;
        // The process ends next: the shared cluster a run used goes with it, directory and all.
        clusters::providers::local::release_shared();
        outcome
    });
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            cli::exit::Exit::of(&e).into()
        }
    }
}
