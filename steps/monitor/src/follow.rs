//! Follows the API server's audit log as it grows, as `tail -F` would: lines as they are
//! completed, from the start of the file, across API-server restarts (which append to it) and
//! across the file being replaced or cut (read again from its start).

use std::io::SeekFrom;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncSeekExt as _, BufReader};

/// How often the end of the file is looked at again.
pub const POLL: Duration = Duration::from_millis(50);

/// Reads `path` line by line.
pub struct Follower {
    path: PathBuf,
    reader: Option<BufReader<tokio::fs::File>>,
    position: u64,
    identity: Option<(u64, u64)>,
    partial: String,
}

/// What a read gave.
pub enum Read {
    Line(String),
    /// Nothing more for now: the end of what is written.
    End,
}

impl Follower {
    pub fn new(path: &Path) -> Follower {
        Follower {
            path: path.to_path_buf(),
            reader: None,
            position: 0,
            identity: None,
            partial: String::new(),
        }
    }

    /// The next complete line, or [`Read::End`] when none is written yet.
    pub async fn next(&mut self) -> std::io::Result<Read> {
        if self.replaced().await? {
            self.reader = None;
        }
        if self.reader.is_none() {
            match tokio::fs::File::open(&self.path).await {
                Ok(mut file) => {
                    file.seek(SeekFrom::Start(0)).await?;
                    self.reader = Some(BufReader::new(file));
                    self.position = 0;
                    self.partial.clear();
                    self.identity = identity(&self.path).await;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Read::End),
                Err(e) => return Err(e),
            }
        }
        let Some(reader) = self.reader.as_mut() else {
            return Ok(Read::End);
        };
        let read = reader.read_line(&mut self.partial).await?;
        self.position += read as u64;
        if self.partial.ends_with('\n') {
            let line = std::mem::take(&mut self.partial);
            return Ok(Read::Line(line.trim_end().to_string()));
        }
        Ok(Read::End)
    }

    /// The file at the path is another one, or shorter than what was read of it.
    async fn replaced(&self) -> std::io::Result<bool> {
        if self.reader.is_none() {
            return Ok(false);
        }
        match tokio::fs::metadata(&self.path).await {
            Ok(meta) => {
                use std::os::unix::fs::MetadataExt as _;
                Ok(Some((meta.dev(), meta.ino())) != self.identity || meta.len() < self.position)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

async fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = tokio::fs::metadata(path).await.ok()?;
    Some((meta.dev(), meta.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    async fn lines(f: &mut Follower) -> Vec<String> {
        let mut out = Vec::new();
        while let Read::Line(line) = f.next().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_given_once_complete_and_a_replaced_file_is_read_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut f = Follower::new(&path);
        assert!(lines(&mut f).await.is_empty(), "no file yet");
        let mut file = std::fs::File::create(&path).unwrap();
        write!(file, "one\ntw").unwrap();
        assert_eq!(lines(&mut f).await, ["one"]);
        write!(file, "o\nthree\n").unwrap();
        assert_eq!(lines(&mut f).await, ["two", "three"]);
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "four\n").unwrap();
        assert_eq!(lines(&mut f).await, ["four"]);
        std::fs::write(&path, "").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"5\n")
            .unwrap();
        assert_eq!(lines(&mut f).await, ["5"], "cut below what was read");
    }
}
