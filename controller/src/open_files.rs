//! The soft limit of open files, raised to the hard one. Go programs do this at start (Go 1.19
//! and later), the reference operator among them; a Rust binary keeps the soft limit it was
//! given, 1024 on most workstations, which a flood of idle connections to the webhook (700 in
//! `webhook::tests::hostile`) would exhaust before a review is answered.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Raises the soft limit of open files to the hard limit; returns the limit now in force
/// (`None`: unlimited).
pub fn raise_to_hard_limit() -> Result<Option<u64>, rustix::io::Errno> {
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )?;
    }
    Ok(limit.maximum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_ends_at_the_hard_one() {
        let hard = getrlimit(Resource::Nofile).maximum;
        assert_eq!(raise_to_hard_limit().unwrap(), hard);
        assert_eq!(getrlimit(Resource::Nofile).current, hard);
    }
}
