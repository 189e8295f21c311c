//! `awconf`: the AppWrapper conformance harness and its embedded cluster.

use awconf::cli;
use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
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
    let outcome = cli.run().await;
    // The process ends next: the shared cluster a run used goes with it, directory and all.
    clusters::local::release_shared();
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            cli::exit::Exit::of(&e).into()
        }
    }
}
