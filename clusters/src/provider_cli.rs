//! Running a provider's command-line tool (kind, k3d) and saying how to install it when it is
//! missing.

use std::process::Command;

use crate::cluster::ClusterError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderCli {
    pub program: &'static str,
    /// Shown when the program is not on PATH.
    pub install: &'static str,
}

impl ProviderCli {
    /// Runs `argv` (whose first element is the program) to completion and returns its stdout.
    pub fn run(&self, argv: &[String]) -> Result<String, ClusterError> {
        let Some((program, args)) = argv.split_first() else {
            return Err(ClusterError::Other("empty command line".into()));
        };
        tracing::debug!("running {}", argv.join(" "));
        let out = Command::new(program).args(args).output().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ClusterError::Other(self.missing())
            } else {
                ClusterError::Other(format!("cannot run {program}: {e}"))
            }
        })?;
        if !out.status.success() {
            return Err(ClusterError::Other(failure(
                argv,
                &out.status.to_string(),
                &String::from_utf8_lossy(&out.stdout),
                &String::from_utf8_lossy(&out.stderr),
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// [`ProviderCli::run`] off the async runtime's threads: creating a cluster takes minutes.
    pub async fn run_blocking(&self, argv: Vec<String>) -> Result<String, ClusterError> {
        let cli = *self;
        tokio::task::spawn_blocking(move || cli.run(&argv))
            .await
            .map_err(|e| ClusterError::Other(e.to_string()))?
    }

    pub fn missing(&self) -> String {
        format!(
            "`{}` is not on PATH; install it with `{}`",
            self.program, self.install
        )
    }
}

fn failure(argv: &[String], status: &str, stdout: &str, stderr: &str) -> String {
    let output = [stdout.trim(), stderr.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    format!("`{}` failed ({status}):\n{output}", argv.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOWHERE: ProviderCli = ProviderCli {
        program: "awconf-no-such-program",
        install: "go install example.com/nowhere@v1.0.0",
    };

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        let err = NOWHERE
            .run(&argv(&[NOWHERE.program, "version"]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`awconf-no-such-program` is not on PATH; install it with `go install example.com/nowhere@v1.0.0`"
        );
    }

    #[test]
    fn stdout_is_returned_and_a_failure_shows_the_command_and_its_output() {
        let sh = ProviderCli {
            program: "sh",
            install: "",
        };
        for (script, expected) in [
            ("echo hello", Ok("hello\n")),
            (
                "echo out; echo err >&2; exit 3",
                Err("`sh -c echo out; echo err >&2; exit 3` failed (exit status: 3):\nout\nerr"),
            ),
            ("exit 1", Err("`sh -c exit 1` failed (exit status: 1):\n")),
        ] {
            let got = sh
                .run(&argv(&["sh", "-c", script]))
                .map_err(|e| e.to_string());
            assert_eq!(
                got,
                expected.map(str::to_string).map_err(str::to_string),
                "{script}"
            );
        }
    }
}
