//! Readiness of the managed certificate: the CA is in the webhook configurations and the
//! kubelet has synced the Secret's serving certificate into the certificate directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::plan::{TLS_CERT, TLS_KEY};

pub const NOT_READY: &str = "certificates are not ready";

/// What the rotator last established.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Established {
    /// `tls.crt` and `tls.key` as the Secret holds them.
    pub serving: Option<(Vec<u8>, Vec<u8>)>,
    /// The CA went into the webhook configurations.
    pub injected: bool,
}

/// Whether the files (`tls.crt`, `tls.key` as read, `None` when unreadable) are what the Secret
/// holds and the CA is injected; `Err` says what is missing.
pub fn in_sync(
    established: &Established,
    files: (Option<Vec<u8>>, Option<Vec<u8>>),
) -> Result<(), &'static str> {
    let Some((cert, key)) = &established.serving else {
        return Err("the webhook Secret holds no certificate yet");
    };
    if !established.injected {
        return Err("the CA is not injected into the webhook configurations yet");
    }
    match files {
        (Some(c), Some(k)) if c == *cert && k == *key => Ok(()),
        (Some(_), Some(_)) => Err("the mounted certificate differs from the Secret's"),
        _ => Err("the Secret's certificate is not mounted yet"),
    }
}

/// Ready from the first time the mounted files match the Secret on: a later rotation does not
/// take the replica out of its Service while the kubelet syncs, as with the rotator.
pub struct Readiness {
    established: Arc<Mutex<Established>>,
    dir: PathBuf,
    ready: AtomicBool,
}

impl Readiness {
    pub fn new(established: Arc<Mutex<Established>>, dir: impl Into<PathBuf>) -> Self {
        Readiness {
            established,
            dir: dir.into(),
            ready: AtomicBool::new(false),
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if self.ready.load(Ordering::Relaxed) {
            return Ok(());
        }
        let established = self
            .established
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default();
        in_sync(&established, read_pair(&self.dir)).map_err(|why| format!("{NOT_READY}: {why}"))?;
        if !self.ready.swap(true, Ordering::Relaxed) {
            tracing::info!(dir = %self.dir.display(), "the webhook certificate is mounted and its CA injected");
        }
        Ok(())
    }
}

fn read_pair(dir: &Path) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let read = |name: &str| std::fs::read(dir.join(name)).ok();
    (read(TLS_CERT), read(TLS_KEY))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn established(serving: bool, injected: bool) -> Established {
        Established {
            serving: serving.then(|| (b"C".to_vec(), b"K".to_vec())),
            injected,
        }
    }

    fn some(s: &str) -> Option<Vec<u8>> {
        Some(s.as_bytes().to_vec())
    }

    #[rstest]
    #[case::nothing_yet(established(false, false), (None, None), Err("the webhook Secret holds no certificate yet"))]
    #[case::not_injected(established(true, false), (some("C"), some("K")), Err("the CA is not injected into the webhook configurations yet"))]
    #[case::not_mounted(established(true, true), (None, None), Err("the Secret's certificate is not mounted yet"))]
    #[case::half_mounted(established(true, true), (some("C"), None), Err("the Secret's certificate is not mounted yet"))]
    #[case::stale_mount(established(true, true), (some("OLD"), some("K")), Err("the mounted certificate differs from the Secret's"))]
    #[case::in_sync(established(true, true), (some("C"), some("K")), Ok(()))]
    fn in_sync_once_injected_and_mounted(
        #[case] established: Established,
        #[case] files: (Option<Vec<u8>>, Option<Vec<u8>>),
        #[case] want: Result<(), &'static str>,
    ) {
        assert_eq!(in_sync(&established, files), want);
    }

    #[test]
    fn stays_ready_when_a_rotation_is_being_synced() {
        let dir = tempfile::tempdir().unwrap();
        let state = Arc::new(Mutex::new(established(true, true)));
        let readiness = Readiness::new(Arc::clone(&state), dir.path());
        let err = readiness.check().unwrap_err();
        assert!(err.starts_with(NOT_READY), "{err}");
        std::fs::write(dir.path().join("tls.crt"), "C").unwrap();
        std::fs::write(dir.path().join("tls.key"), "K").unwrap();
        readiness.check().unwrap();
        state.lock().unwrap().serving = Some((b"C2".to_vec(), b"K2".to_vec()));
        readiness.check().unwrap();
    }
}
