//! The certificate the metrics endpoint presents when none is configured, as controller-runtime
//! generates one: self-signed for `localhost` and `127.0.0.1` (clients skip verification).

use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use super::CertError;

pub fn self_signed_localhost(
    provider: &CryptoProvider,
) -> Result<Arc<SingleCertAndKey>, CertError> {
    Ok(Arc::new(SingleCertAndKey::from(certified_localhost(
        provider,
    )?)))
}

fn certified_localhost(provider: &CryptoProvider) -> Result<CertifiedKey, CertError> {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .map_err(|e| CertError::Read {
                path: "a self-signed certificate".to_owned(),
                message: e.to_string(),
            })?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));
    let cert = CertificateDer::from(generated.cert.der().to_vec());
    Ok(CertifiedKey::from_der(vec![cert], key, provider)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::https::crypto_provider;

    #[test]
    fn names_localhost_and_loopback() {
        let key = certified_localhost(&crypto_provider()).unwrap();
        let der = key.end_entity_cert().unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
        let names = cert.subject_alternative_name().unwrap().unwrap();
        let text = format!("{:?}", names.value.general_names);
        assert!(
            text.contains("localhost") && text.contains("IPAddress([127, 0, 0, 1])"),
            "{text}"
        );
    }
}
