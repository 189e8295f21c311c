//! The webhook's serving certificate, read from PEM files and reloaded when they change.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

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

/// Size and modification time of the two files: a change in either means "reload".
type Stamp = [(Option<SystemTime>, u64); 2];

/// A certificate resolver over `tls.crt`/`tls.key` style files. Until the files have been read
/// successfully handshakes fail and [`ReloadingCert::is_ready`] is false.
pub struct ReloadingCert {
    cert_file: PathBuf,
    key_file: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Option<(Stamp, Arc<CertifiedKey>)>>,
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

    /// Reads the files again if they changed since the last successful read. Returns whether a
    /// new certificate was loaded; on error the previous one stays in use.
    pub fn reload_if_changed(&self) -> Result<bool, CertError> {
        let stamp = [stamp(&self.cert_file), stamp(&self.key_file)];
        let unchanged = self
            .current
            .read()
            .is_ok_and(|c| c.as_ref().is_some_and(|(old, _)| *old == stamp));
        if unchanged {
            return Ok(false);
        }
        let key = self.load()?;
        if let Ok(mut current) = self.current.write() {
            *current = Some((stamp, Arc::new(key)));
        }
        Ok(true)
    }

    fn load(&self) -> Result<CertifiedKey, CertError> {
        let cert_path = self.cert_file.display().to_string();
        let key_path = self.key_file.display().to_string();
        let read_err = |path: &str, e: &dyn fmt::Display| CertError::Read {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let certs = CertificateDer::pem_file_iter(&self.cert_file)
            .map_err(|e| read_err(&cert_path, &e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| read_err(&cert_path, &e))?;
        if certs.is_empty() {
            return Err(CertError::Empty { path: cert_path });
        }
        let key =
            PrivateKeyDer::from_pem_file(&self.key_file).map_err(|e| read_err(&key_path, &e))?;
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

fn stamp(path: &Path) -> (Option<SystemTime>, u64) {
    match std::fs::metadata(path) {
        Ok(meta) => (meta.modified().ok(), meta.len()),
        Err(_) => (None, 0),
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().ok()?;
        current.as_ref().map(|(_, key)| Arc::clone(key))
    }
}

/// A TLS server configuration over `certs`; HTTP/2 is offered only when asked for.
pub fn server_config(
    certs: Arc<ReloadingCert>,
    provider: Arc<CryptoProvider>,
    http2: bool,
) -> Result<rustls::ServerConfig, CertError> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(certs);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

pub fn crypto_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
