//! `awconf`: the AppWrapper conformance harness and its embedded cluster.

fn main() -> std::process::ExitCode {
    awconf::main()
}
