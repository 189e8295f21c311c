//! Printing a listing that a reader may cut short (`awconf features steps | head`): a closed
//! pipe ends the listing quietly, as it does for `ls` or `kubectl get`, instead of a panic.

use std::io::Write as _;

/// Writes each line to standard output until the reader goes away.
pub fn print(lines: impl IntoIterator<Item = String>) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in lines {
        match writeln!(out, "{line}") {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
    }
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
