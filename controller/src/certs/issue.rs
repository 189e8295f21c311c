//! Issuing the webhook's CA and serving certificate, shaped as the cert-controller rotator
//! shapes them (CA: common name and DNS name `certificateName`, organization
//! `certificateOrg`; serving: common name the service's DNS name, server authentication). Keys
//! are ECDSA P-256 in PKCS#8 rather than the rotator's RSA 2048 in PKCS#1.

use std::time::SystemTime;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use time::OffsetDateTime;

use super::pkcs8;

#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("ca.key cannot sign: {0}")]
    UnusableCaKey(String),
}

/// A PEM certificate and its PEM key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A self-signed CA valid from `not_before` until `not_after`.
pub fn new_ca(
    name: &str,
    organization: &str,
    not_before: SystemTime,
    not_after: SystemTime,
) -> Result<Issued, IssueError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![name.to_owned()])?;
    params.distinguished_name.push(DnType::CommonName, name);
    params
        .distinguished_name
        .push(DnType::OrganizationName, organization);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.not_before = OffsetDateTime::from(not_before);
    params.not_after = OffsetDateTime::from(not_after);
    let cert = params.self_signed(&key)?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A serving certificate for `dns_names` (the first is its common name), signed by the CA
/// `ca`.
pub fn new_serving(
    ca: &Issued,
    dns_names: &[String],
    not_before: SystemTime,
    not_after: SystemTime,
) -> Result<Issued, IssueError> {
    let issuer = issuer(ca)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    if let Some(first) = dns_names.first() {
        params.distinguished_name.push(DnType::CommonName, first);
    }
    for name in dns_names {
        params
            .subject_alt_names
            .push(SanType::DnsName(name.clone().try_into()?));
    }
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = OffsetDateTime::from(not_before);
    params.not_after = OffsetDateTime::from(not_after);
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The CA as a signer. A CA the rotator wrote has an RSA key in PKCS#1, which is rewrapped as
/// PKCS#8 for signing.
fn issuer(ca: &Issued) -> Result<Issuer<'static, KeyPair>, IssueError> {
    let unusable = |e: &dyn std::fmt::Display| IssueError::UnusableCaKey(e.to_string());
    let key = PrivateKeyDer::from_pem_slice(ca.key_pem.as_bytes()).map_err(|e| unusable(&e))?;
    let pkcs8_der = match key {
        PrivateKeyDer::Pkcs8(der) => der.secret_pkcs8_der().to_vec(),
        PrivateKeyDer::Pkcs1(der) => pkcs8::from_rsa_pkcs1(der.secret_pkcs1_der()),
        _ => return Err(unusable(&"only PKCS#8 and RSA PKCS#1 keys are supported")),
    };
    let key = KeyPair::try_from(pkcs8_der.as_slice()).map_err(|e| unusable(&e))?;
    Issuer::from_ca_cert_pem(&ca.cert_pem, key).map_err(|e| unusable(&e))
}
