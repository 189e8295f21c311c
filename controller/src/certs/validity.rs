//! Whether the certificates in the webhook Secret can be used at a given time, judged as the
//! cert-controller rotator's `ValidCert` judges them: the key belongs to the certificate, the
//! certificate chains to the CA, is within its validity period and names the expected host.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

use crate::https::crypto_provider;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    #[error("{0} is missing")]
    Missing(&'static str),
    #[error("{0} holds no readable certificate")]
    Unreadable(&'static str),
    #[error("{0}: its key is unreadable or does not match it")]
    KeyMismatch(&'static str),
    #[error("{what} is not valid at {at} (valid from {from} until {until})")]
    OutsideValidity {
        what: &'static str,
        at: i64,
        from: i64,
        until: i64,
    },
    #[error("{0} is not a certificate authority")]
    NotCa(&'static str),
    #[error("{what} does not name {name}")]
    Name { what: &'static str, name: String },
    #[error("{what} does not chain to ca.crt for server use: {why}")]
    Chain { what: &'static str, why: String },
}

/// A CA the Secret can keep: `ca.crt` is a CA for `ca_name`, valid at `at`, and `ca.key` is its
/// key.
pub fn valid_ca(
    ca_crt: &[u8],
    ca_key: &[u8],
    ca_name: &str,
    at: SystemTime,
) -> Result<(), Invalid> {
    let what = "ca.crt";
    let der = first_certificate(what, ca_crt)?;
    key_matches(what, &der, ca_key)?;
    let cert = parse(what, &der)?;
    within_validity(what, &cert, at)?;
    if !cert
        .basic_constraints()
        .ok()
        .flatten()
        .is_some_and(|c| c.value.ca)
    {
        return Err(Invalid::NotCa(what));
    }
    names_dns(what, &cert, ca_name)
}

/// A serving certificate the Secret can keep: `tls.crt` chains to `ca.crt` for server
/// authentication at `at`, names `dns_name`, and `tls.key` is its key.
pub fn valid_serving(
    ca_crt: &[u8],
    tls_crt: &[u8],
    tls_key: &[u8],
    dns_name: &str,
    at: SystemTime,
) -> Result<(), Invalid> {
    let ca_der = first_certificate("ca.crt", ca_crt)?;
    within_validity("ca.crt", &parse("ca.crt", &ca_der)?, at)?;
    let what = "tls.crt";
    let der = first_certificate(what, tls_crt)?;
    key_matches(what, &der, tls_key)?;
    within_validity(what, &parse(what, &der)?, at)?;
    let chain = |e: webpki::Error| Invalid::Chain {
        what,
        why: format!("{e:?}"),
    };
    let anchor = webpki::anchor_from_trusted_cert(&ca_der).map_err(chain)?;
    let leaf = webpki::EndEntityCert::try_from(&der).map_err(chain)?;
    leaf.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        UnixTime::since_unix_epoch(since_epoch(at)),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .map_err(chain)?;
    let name = ServerName::try_from(dns_name).map_err(|_| Invalid::Name {
        what,
        name: dns_name.to_owned(),
    })?;
    leaf.verify_is_valid_for_subject_name(&name)
        .map_err(|_| Invalid::Name {
            what,
            name: dns_name.to_owned(),
        })
}

fn first_certificate(what: &'static str, pem: &[u8]) -> Result<CertificateDer<'static>, Invalid> {
    if pem.is_empty() {
        return Err(Invalid::Missing(what));
    }
    CertificateDer::pem_slice_iter(pem)
        .next()
        .and_then(Result::ok)
        .ok_or(Invalid::Unreadable(what))
}

fn parse<'a>(
    what: &'static str,
    der: &'a CertificateDer<'_>,
) -> Result<X509Certificate<'a>, Invalid> {
    X509Certificate::from_der(der.as_ref())
        .map(|(_, cert)| cert)
        .map_err(|_| Invalid::Unreadable(what))
}

fn key_matches(
    what: &'static str,
    der: &CertificateDer<'static>,
    key_pem: &[u8],
) -> Result<(), Invalid> {
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|_| Invalid::KeyMismatch(what))?;
    CertifiedKey::from_der(vec![der.clone()], key, &crypto_provider())
        .map(|_| ())
        .map_err(|_| Invalid::KeyMismatch(what))
}

fn within_validity(
    what: &'static str,
    cert: &X509Certificate<'_>,
    at: SystemTime,
) -> Result<(), Invalid> {
    let at = i64::try_from(since_epoch(at).as_secs()).unwrap_or(i64::MAX);
    let from = cert.validity().not_before.timestamp();
    let until = cert.validity().not_after.timestamp();
    if (from..=until).contains(&at) {
        Ok(())
    } else {
        Err(Invalid::OutsideValidity {
            what,
            at,
            from,
            until,
        })
    }
}

fn names_dns(what: &'static str, cert: &X509Certificate<'_>, name: &str) -> Result<(), Invalid> {
    let named =
        cert.subject_alternative_name()
            .ok()
            .flatten()
            .is_some_and(|san| {
                san.value.general_names.iter().any(
                    |n| matches!(n, GeneralName::DNSName(dns) if dns.eq_ignore_ascii_case(name)),
                )
            });
    if named {
        Ok(())
    } else {
        Err(Invalid::Name {
            what,
            name: name.to_owned(),
        })
    }
}

fn since_epoch(at: SystemTime) -> Duration {
    at.duration_since(UNIX_EPOCH).unwrap_or_default()
}
