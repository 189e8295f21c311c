//! Running a provider's command-line tool (kind, k3d) and saying how to install it when it is
//! missing.

use std::process::Command;

use crate::cluster::ClusterError;

/// Why a provider's tool did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("`{program}` is not on PATH; install it with `{install}`")]
    Missing {
        program: &'static str,
        install: &'static str,
    },
    #[error("cannot run {program}: {source}")]
    Spawn {
        program: &'static str,
        source: std::io::Error,
    },
    /// It ran and failed: the command line, its exit status and what it printed.
    #[error("`{command_line}` failed ({status}):\n{output}")]
    Failed {
        command_line: String,
        status: String,
        output: String,
    },
    #[error("{program} did not finish: {source}")]
    Lost {
        program: &'static str,
        source: tokio::task::JoinError,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderCli {
    pub program: &'static str,
    /// Shown when the program is not on PATH.
    pub install: &'static str,
}

impl From<ToolError> for ClusterError {
    fn from(e: ToolError) -> Self {
        ClusterError::Provider(Box::new(e))
    }
}

impl ProviderCli {
    /// `program args...`, as the user would type it.
    pub fn command_line(&self, args: &[String]) -> String {
        std::iter::once(self.program)
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the program with `args` to completion and returns its stdout.
    pub fn run(&self, args: &[String]) -> Result<String, ToolError> {
        tracing::debug!("running {}", self.command_line(args));
        let out = Command::new(self.program)
            .args(args)
            .output()
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::NotFound {
                    self.missing()
                } else {
                    ToolError::Spawn {
                        program: self.program,
                        source,
                    }
                }
            })?;
        if !out.status.success() {
            return Err(ToolError::Failed {
                command_line: self.command_line(args),
                status: out.status.to_string(),
                output: output(
                    &String::from_utf8_lossy(&out.stdout),
                    &String::from_utf8_lossy(&out.stderr),
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// [`ProviderCli::run`] off the async runtime's threads: creating a cluster takes minutes.
    pub async fn run_blocking(&self, args: Vec<String>) -> Result<String, ToolError> {
        let cli = *self;
        tokio::task::spawn_blocking(move || cli.run(&args))
            .await
            .map_err(|source| ToolError::Lost {
                program: self.program,
                source,
            })?
    }

    pub fn missing(&self) -> ToolError {
        ToolError::Missing {
            program: self.program,
            install: self.install,
        }
    }
}

/// What a failed command printed, stdout then stderr.
fn output(stdout: &str, stderr: &str) -> String {
    [stdout.trim(), stderr.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A stand-in for kind or k3d in tests: a script that records each command line, one a line.
#[cfg(test)]
pub(crate) mod fake {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::ProviderCli;

    pub struct FakeCli {
        pub cli: ProviderCli,
        log: PathBuf,
    }

    impl FakeCli {
        /// Every call prints `stdout` and exits with `status`.
        pub fn new(dir: &Path, stdout: &str, status: i32) -> Self {
            let log = dir.join("calls.log");
            let program = dir.join("fake-cli");
            let script = format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nprintf '%s' '{stdout}'\nexit {status}\n",
                log.display()
            );
            std::fs::write(&program, script).unwrap();
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
            let program: &'static str = Box::leak(program.display().to_string().into_boxed_str());
            Self {
                cli: ProviderCli {
                    program,
                    install: "",
                },
                log,
            }
        }

        pub fn calls(&self) -> Vec<String> {
            std::fs::read_to_string(&self.log)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_missing_program_says_how_to_install_it() {
        let nowhere = ProviderCli {
            program: "awconf-no-such-program",
            install: "go install example.com/nowhere@v1.0.0",
        };
        let err = nowhere.run(&args(&["version"])).unwrap_err();
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
            let got = sh.run(&args(&["-c", script])).map_err(|e| e.to_string());
            assert_eq!(
                got,
                expected.map(str::to_string).map_err(str::to_string),
                "{script}"
            );
        }
    }

    #[test]
    fn the_fake_records_each_call_and_prints_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let fake = fake::FakeCli::new(dir.path(), "out", 0);
        assert_eq!(fake.cli.run(&args(&["a", "b"])).unwrap(), "out");
        fake.cli.run(&args(&["c"])).unwrap();
        assert_eq!(fake.calls(), ["a b", "c"]);
    }
}
