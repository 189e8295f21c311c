//! Finding a Go toolchain that is new enough.

use std::process::Command;

use super::MIN_GO;

#[derive(Debug, thiserror::Error)]
pub enum GoError {
    #[error(
        "`go` was not found on PATH. Install Go {}.{} or newer (https://go.dev/doc/install, or your \
         package manager's golang package) and run again.",
        MIN_GO.0, MIN_GO.1
    )]
    Missing,
    #[error(
        "`go version` says {found}, but building Kubernetes 1.36 and Kueue needs Go {}.{} or newer. \
         Install a newer Go and make sure it is first on PATH.",
        MIN_GO.0, MIN_GO.1
    )]
    TooOld { found: String },
    #[error("could not understand the output of `go version`: {0:?}")]
    Unparsable(String),
}

/// Returns the `go version` line when Go is present and new enough.
pub fn check_go() -> Result<String, GoError> {
    let out = Command::new("go")
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|_| GoError::Missing)?;
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let found = parse_go_version(&line).ok_or_else(|| GoError::Unparsable(line.clone()))?;
    if found < MIN_GO {
        return Err(GoError::TooOld { found: line });
    }
    Ok(line)
}

/// `go version go1.26.8 linux/amd64` -> (1, 26).
fn parse_go_version(line: &str) -> Option<(u32, u32)> {
    let word = line.split_whitespace().find(|w| w.starts_with("go1"))?;
    let mut parts = word.trim_start_matches("go").split(['.', 'r', 'b']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_release_and_prerelease_versions() {
        assert_eq!(
            parse_go_version("go version go1.26.8 linux/amd64"),
            Some((1, 26))
        );
        assert_eq!(
            parse_go_version("go version go1.27rc1 linux/amd64"),
            Some((1, 27))
        );
        assert_eq!(
            parse_go_version("go version go1.19 linux/amd64"),
            Some((1, 19))
        );
        assert_eq!(parse_go_version("bash: go: not found"), None);
    }

    #[test]
    fn older_go_compares_below_the_minimum() {
        assert!(parse_go_version("go version go1.25.3 linux/amd64").unwrap() < MIN_GO);
        assert!(parse_go_version("go version go1.26.0 linux/amd64").unwrap() >= MIN_GO);
    }
}
