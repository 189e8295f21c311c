//! Reports of a run, static files that work when opened from disk: `index.html` (features,
//! the phase diagram with the scenarios behind each edge, the parameters of the design and
//! the scenarios that test them, what was skipped), a page per scenario (its Gherkin text
//! with each step's outcome, a timeline of each of its AppWrappers, its artifacts), and
//! `results.json` for `awconf report compare` and `awconf report summary`, and `junit.xml`.
//! Cucumber JSON comes from cucumber's writer.

pub mod attempts;
pub mod compare;
pub mod events;
pub mod gherkin;
pub mod html;
pub mod index;
pub mod junit;
pub mod logs;
pub mod parameters;
pub mod phase_diagram;
pub mod record;
pub mod recorder;
pub mod results;
mod run_summary;
pub mod scenario_page;
pub mod specification;
mod status;
pub mod summary;
pub mod time_spent;
pub mod timeline;

use std::path::{Path, PathBuf};

pub use record::{Report, ScenarioRecord, Skipped};
pub use run_summary::Summary;
pub use status::Status;

/// Writes a page per scenario, `results.json`, `specification.html` and `index.html` into
/// `dir`; returns the path of the index.
pub fn write(dir: &Path, report: &Report<'_>) -> anyhow::Result<PathBuf> {
    for record in report.records {
        scenario_page::write(dir, record)?;
    }
    results::RunResults::of(report).write(dir)?;
    specification::write(dir, report)?;
    index::write(dir, report)
}
