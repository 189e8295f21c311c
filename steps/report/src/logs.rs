//! The log lines of one scenario: where each log file stood when it started, and the lines
//! written since that mention its namespace or its AppWrappers.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct LogMarks(pub Vec<(&'static str, PathBuf, u64)>);

impl LogMarks {
    /// The current length of each file.
    pub fn take(files: &[(&'static str, PathBuf)]) -> LogMarks {
        LogMarks(
            files
                .iter()
                .map(|(label, path)| {
                    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                    (*label, path.clone(), len)
                })
                .collect(),
        )
    }

    /// For each file, the lines written since the mark that mention `namespace` or
    /// `appwrapper=<name>` for one of `names`.
    pub fn lines_since(
        &self,
        namespace: &str,
        names: &[String],
    ) -> Vec<(&'static str, Vec<String>)> {
        self.0
            .iter()
            .map(|(label, path, offset)| {
                let text = read_from(path, *offset);
                let lines = text
                    .lines()
                    .filter(|line| mentions(line, namespace, names))
                    .map(str::to_string)
                    .collect();
                (*label, lines)
            })
            .collect()
    }
}

fn read_from(path: &Path, offset: u64) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(offset)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

pub fn mentions(line: &str, namespace: &str, names: &[String]) -> bool {
    (!namespace.is_empty() && line.contains(namespace))
        || names.iter().any(|n| {
            line.contains(&format!("appwrapper={n} ")) || line.ends_with(&format!("appwrapper={n}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_lines_about_the_scenario_are_kept() {
        let dir = std::env::temp_dir().join(format!("awconf-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.log");
        std::fs::write(&path, "old ns-a line\n").unwrap();
        let marks = LogMarks::take(&[("x", path.clone())]);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("new ns-a line\nnew ns-b line\nreconcile appwrapper=job failed\n");
        std::fs::write(&path, text).unwrap();
        let lines = marks.lines_since("ns-a", &["job".to_string()]);
        assert_eq!(
            lines[0].1,
            vec![
                "new ns-a line".to_string(),
                "reconcile appwrapper=job failed".to_string()
            ]
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
