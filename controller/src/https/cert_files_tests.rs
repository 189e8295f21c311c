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
