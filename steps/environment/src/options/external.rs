//! The command `--controller external` runs: a shell line or an argv, with the suite's
//! placeholders (`{kubeconfig}`, `{config}`, ...) filled in.

use std::fmt;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExternalCommand {
    /// Run by `sh -c`: one word after `--` (`-- 'a && b'`), or `AWCONF_CONTROLLER_COMMAND`.
    Shell(String),
    /// Run as is, one argument per word: the words after `--`, as the caller's shell split
    /// and unquoted them.
    Argv(Vec<String>),
}

impl ExternalCommand {
    /// The words after `--`: none is no command, one is a shell line, more are an argv.
    pub fn from_words(mut words: Vec<String>) -> Option<Self> {
        match words.len() {
            0 => None,
            1 => Some(ExternalCommand::Shell(words.remove(0))),
            _ => Some(ExternalCommand::Argv(words)),
        }
    }

    pub fn is_blank(&self) -> bool {
        match self {
            ExternalCommand::Shell(line) => line.trim().is_empty(),
            ExternalCommand::Argv(words) => words.iter().all(|w| w.is_empty()),
        }
    }

    /// Whether `placeholder` appears anywhere in the command.
    pub fn names(&self, placeholder: &str) -> bool {
        self.words().iter().any(|w| w.contains(placeholder))
    }

    /// The same command with `fill` applied to each word (to the line, for a shell line).
    pub fn map(&self, fill: impl Fn(&str) -> String) -> Self {
        match self {
            ExternalCommand::Shell(line) => ExternalCommand::Shell(fill(line)),
            ExternalCommand::Argv(words) => {
                ExternalCommand::Argv(words.iter().map(|w| fill(w)).collect())
            }
        }
    }

    /// The program to start and its arguments.
    pub fn program_and_args(&self) -> (PathBuf, Vec<String>) {
        match self {
            ExternalCommand::Shell(line) => ("/bin/sh".into(), vec!["-c".into(), line.clone()]),
            ExternalCommand::Argv(words) => (words[0].clone().into(), words[1..].to_vec()),
        }
    }

    fn words(&self) -> &[String] {
        match self {
            ExternalCommand::Shell(line) => std::slice::from_ref(line),
            ExternalCommand::Argv(words) => words,
        }
    }
}

/// As a user would type it: an argv's words single-quoted where a shell would split them.
impl fmt::Display for ExternalCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExternalCommand::Shell(line) => f.write_str(line),
            ExternalCommand::Argv(words) => match shlex::try_join(words.iter().map(String::as_str))
            {
                Ok(line) => f.write_str(&line),
                // Only a NUL cannot be quoted, and no argument the kernel passes on holds one.
                Err(_) => write!(f, "{words:?}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn one_word_is_a_shell_line_and_more_are_an_argv() {
        assert_eq!(ExternalCommand::from_words(Vec::new()), None);
        let line = ExternalCommand::from_words(words(&["a && b {kubeconfig}"])).unwrap();
        assert_eq!(
            line.program_and_args(),
            ("/bin/sh".into(), words(&["-c", "a && b {kubeconfig}"]))
        );
        let argv =
            ExternalCommand::from_words(words(&["manager", "--name", "it's {config}"])).unwrap();
        let filled = argv.map(|w| w.replace("{config}", "/my dir/c.yaml"));
        assert_eq!(
            filled.program_and_args(),
            ("manager".into(), words(&["--name", "it's /my dir/c.yaml"]))
        );
        let shown = filled.to_string();
        assert_eq!(
            shlex::split(&shown),
            Some(words(&["manager", "--name", "it's /my dir/c.yaml"])),
            "{shown}"
        );
        assert!(argv.names("{config}") && !argv.names("{webhook-port}"));
        assert!(ExternalCommand::Shell("  ".into()).is_blank());
    }
}
