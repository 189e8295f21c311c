//! How a scenario ended, as every page and file of a report names it.

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    Failed,
    /// Passed, but only on a retry.
    Flaky,
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Flaky => "flaky",
            Status::Skipped => "skipped",
        }
    }
}
