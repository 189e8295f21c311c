//! A serving certificate read from PEM files and reloaded when their contents change (a
//! kubelet-synced secret volume swaps them in place).

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("reading {path}: {message}")]
    Read { path: String, message: String },
    #[error("{path} holds no certificate")]
    Empty { path: String },
    #[error("unusable private key in {path}: {source}")]
    Key { path: String, source: rustls::Error },
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The bytes of the certificate file and of the key file, as last loaded.
type Contents = (Vec<u8>, Vec<u8>);

/// A certificate resolver over `tls.crt`/`tls.key` style files. Until the files have been read
/// successfully handshakes fail and [`ReloadingCert::is_ready`] is false.
pub struct ReloadingCert {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Option<(Contents, Arc<CertifiedKey>)>>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert_file", &self.cert_file)
            .field("key_file", &self.key_file)
            .field("ready", &self.is_ready())
            .finish()
    }
}

impl ReloadingCert {
    pub fn new(cert_file: PathBuf, key_file: PathBuf, provider: Arc<CryptoProvider>) -> Self {
        ReloadingCert {
            cert_file,
            key_file,
            provider,
            current: RwLock::new(None),
        }
    }

    pub fn is_ready(&self) -> bool {
        self.current.read().is_ok_and(|c| c.is_some())
    }

    /// Reads the files again and loads them if their contents changed since the last successful
    /// load. Returns whether a new certificate was loaded; on error the previous one stays in
    /// use.
    pub fn reload_if_changed(&self) -> Result<bool, CertError> {
        let contents = (read(&self.cert_file)?, read(&self.key_file)?);
        let unchanged = self
            .current
            .read()
            .is_ok_and(|c| c.as_ref().is_some_and(|(old, _)| *old == contents));
        if unchanged {
            return Ok(false);
        }
        let key = self.load(&contents)?;
        if let Ok(mut current) = self.current.write() {
            *current = Some((contents, Arc::new(key)));
        }
        Ok(true)
    }

    fn load(&self, (cert_pem, key_pem): &Contents) -> Result<CertifiedKey, CertError> {
        let cert_path = self.cert_file.display().to_string();
        let key_path = self.key_file.display().to_string();
        let read_err = |path: &str, e: &dyn fmt::Display| CertError::Read {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let certs = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| read_err(&cert_path, &e))?;
        if certs.is_empty() {
            return Err(CertError::Empty { path: cert_path });
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| read_err(&key_path, &e))?;
        let signing = self
            .provider
            .key_provider
            .load_private_key(key)
            .map_err(|source| CertError::Key {
                path: key_path,
                source,
            })?;
        Ok(CertifiedKey::new(certs, signing))
    }
}

fn read(path: &PathBuf) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|e| CertError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().ok()?;
        current.as_ref().map(|(_, key)| Arc::clone(key))
    }
}

#[cfg(test)]
mod tests {
    use super::ReloadingCert;
    use crate::https::crypto_provider;

    fn self_signed(name: &str) -> (String, String) {
        let cert = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        (cert.cert.pem(), cert.signing_key.serialize_pem())
    }

    #[test]
    fn loads_when_the_files_appear_and_reloads_when_their_contents_change() {
        let dir = tempfile::tempdir().unwrap();
        let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
        let certs = ReloadingCert::new(crt.clone(), key.clone(), crypto_provider());
        assert!(certs.reload_if_changed().is_err());
        assert!(!certs.is_ready());

        let (c, k) = self_signed("one");
        std::fs::write(&crt, &c).unwrap();
        std::fs::write(&key, &k).unwrap();
        assert!(certs.reload_if_changed().unwrap());
        assert!(certs.is_ready());
        assert!(
            !certs.reload_if_changed().unwrap(),
            "unchanged files are not loaded again"
        );

        // Same sizes, and possibly the same modification time: only the contents tell.
        let (c2, k2) = self_signed("two");
        std::fs::write(&crt, &c2).unwrap();
        std::fs::write(&key, &k2).unwrap();
        assert!(certs.reload_if_changed().unwrap());

        std::fs::write(&key, "garbage").unwrap();
        assert!(certs.reload_if_changed().is_err());
        assert!(
            certs.is_ready(),
            "a bad file keeps the previous certificate"
        );
    }
}
