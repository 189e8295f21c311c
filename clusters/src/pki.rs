//! Certificates for a local cluster: one CA that signs the API server's serving certificate,
//! the admin client certificate, and the serving certificates of webhooks run on loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("certificate generation failed: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A PEM certificate and its PKCS#8 key.
#[derive(Clone, Debug)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

impl CertPair {
    /// Writes `<dir>/<name>.crt` and `<dir>/<name>.key`, returning their paths.
    pub fn write(&self, dir: &Path, name: &str) -> Result<(PathBuf, PathBuf), PkiError> {
        let crt = dir.join(format!("{name}.crt"));
        let key = dir.join(format!("{name}.key"));
        write_file(&crt, &self.cert_pem)?;
        write_file(&key, &self.key_pem)?;
        Ok((crt, key))
    }
}

/// The cluster's certificate authority.
pub struct Ca {
    pub pair: CertPair,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    pub fn generate() -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "awconf-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.serial_number = Some(1u64.into());
        let cert = params.self_signed(&key)?;
        let pair = CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        };
        Ok(Self {
            pair,
            issuer: Issuer::new(params, key),
        })
    }

    /// Loads a CA written earlier by [`CertPair::write`].
    pub fn load(dir: &Path, name: &str) -> Result<Self, PkiError> {
        let cert_pem = read_file(&dir.join(format!("{name}.crt")))?;
        let key_pem = read_file(&dir.join(format!("{name}.key")))?;
        let key = KeyPair::from_pem(&key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)?;
        Ok(Self {
            pair: CertPair { cert_pem, key_pem },
            issuer,
        })
    }

    /// A serving certificate for loopback plus the given DNS names.
    pub fn serving(
        &self,
        common_name: &str,
        dns: &[&str],
        ips: &[IpAddr],
    ) -> Result<CertPair, PkiError> {
        let mut params = leaf(common_name)?;
        for name in dns.iter().copied().chain(["localhost"]) {
            params
                .subject_alt_names
                .push(SanType::DnsName(name.try_into()?));
        }
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)));
        params
            .subject_alt_names
            .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate; `organization` becomes the user's group (`system:masters` = admin).
    pub fn client(
        &self,
        common_name: &str,
        organization: Option<&str>,
    ) -> Result<CertPair, PkiError> {
        let mut params = leaf(common_name)?;
        if let Some(org) = organization {
            params
                .distinguished_name
                .push(DnType::OrganizationName, org);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<CertPair, PkiError> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A fresh ECDSA P-256 key for signing service-account tokens: (private PEM, public PEM).
pub fn service_account_key() -> Result<(String, String), PkiError> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

fn leaf(common_name: &str) -> Result<CertificateParams, PkiError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.serial_number = Some(rand_serial().into());
    Ok(params)
}

fn rand_serial() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) >> 2
}

fn write_file(path: &Path, text: &str) -> Result<(), PkiError> {
    crate::owner_only::write(path, text).map_err(|source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_file(path: &Path) -> Result<String, PkiError> {
    std::fs::read_to_string(path).map_err(|source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    })
}
