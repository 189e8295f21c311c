//! The exit codes of `awconf`, one meaning each, as `--help` lists them.

use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Every selected scenario passed (or the command did what it was asked).
    Passed = 0,
    /// The suite ran and some scenario failed.
    Failed = 1,
    /// A flag, an environment variable, a feature file or a filter is wrong: nothing ran.
    Usage = 2,
    /// The environment failed: the cluster, Kueue or the controller under test did not start.
    Environment = 3,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

impl Exit {
    /// The code for an error that ended a command: the environment's when it says so.
    pub fn of(error: &anyhow::Error) -> Exit {
        let environment = error.chain().any(|cause| {
            cause.is::<conformance_steps::EnvironmentFailed>()
                || cause.is::<clusters::ClusterError>()
        });
        if environment {
            Exit::Environment
        } else {
            Exit::Usage
        }
    }

    pub const ALL: [Exit; 4] = [Exit::Passed, Exit::Failed, Exit::Usage, Exit::Environment];

    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Passed => "every selected scenario passed",
            Exit::Failed => "the suite ran and a scenario failed",
            Exit::Usage => {
                "a flag, environment variable, feature file or filter is wrong; nothing ran"
            }
            Exit::Environment => {
                "the environment failed: the cluster, Kueue or the controller did not start"
            }
        }
    }
}

/// Shown after `--help`: the exit codes, and the rule for the environment.
pub fn help() -> String {
    let mut text = String::from("Exit codes:\n");
    for exit in Exit::ALL {
        text += &format!("  {}  {}\n", exit as u8, exit.meaning());
    }
    text + "
Every flag with [env: AWCONF_...] reads that variable when the flag is not given: the flag
wins over the variable, the variable over the default. AWCONF_CACHE (default
$XDG_CACHE_HOME/awconf, else ~/.cache/awconf) holds the built binaries; AWCONF_LOG filters
the log (tracing's syntax, e.g. `info,awconf=debug`)."
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_failure_is_3_and_anything_else_2() {
        let environment = anyhow::Error::new(conformance_steps::EnvironmentFailed::from(
            anyhow::anyhow!("etcd did not start"),
        ))
        .context("running the suite");
        assert_eq!(Exit::of(&environment), Exit::Environment);
        let cluster = anyhow::Error::new(clusters::ClusterError::Provider("no kind".into()));
        assert_eq!(Exit::of(&cluster), Exit::Environment);
        assert_eq!(Exit::of(&anyhow::anyhow!("--tags: bad")), Exit::Usage);
    }
}
