//! What is wrong with a feature file, found before a run starts anything.

use std::fmt;
use std::path::PathBuf;

/// One problem, at a line of a feature file (line 0: the file as a whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl Problem {
    pub fn at(file: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Problem {
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file.display(), self.message),
            line => write!(f, "{}:{line}: {}", self.file.display(), self.message),
        }
    }
}

/// The feature files cannot run; every problem found, in file and line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidFeatures(pub Vec<Problem>);

impl fmt::Display for InvalidFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.0.len();
        write!(
            f,
            "{count} problem{} in the feature files; nothing was started",
            if count == 1 { "" } else { "s" }
        )?;
        for problem in &self.0 {
            write!(f, "\n{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidFeatures {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_name_file_and_line() {
        let table = [
            (Problem::at("a.feature", 7, "boom"), "a.feature:7: boom"),
            (Problem::at("dir", 0, "no files"), "dir: no files"),
        ];
        for (problem, want) in table {
            assert_eq!(problem.to_string(), want);
        }
        let invalid = InvalidFeatures(vec![Problem::at("a.feature", 7, "boom")]);
        assert_eq!(
            invalid.to_string(),
            "1 problem in the feature files; nothing was started\na.feature:7: boom"
        );
    }
}
