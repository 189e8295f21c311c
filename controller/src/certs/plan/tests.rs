use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::certs::issue::{Issued, new_ca, new_serving};

const DAY: Duration = Duration::from_secs(86_400);
const SERVICE: &str = "appwrapper-webhook-service.appwrapper-system.svc";

/// 2030-01-01T00:00:00Z.
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_893_456_000)
}

fn names() -> Names {
    Names {
        ca_name: "appwrapper-ca".to_owned(),
        ca_organization: "appwrapper".to_owned(),
        service_dns: SERVICE.to_owned(),
    }
}

/// Issued `ago` before [`now`], valid for `days`.
fn ca(ago: Duration, days: u32, name: &str) -> Issued {
    let from = now() - ago;
    new_ca(name, "appwrapper", from, from + DAY * days).unwrap()
}

fn serving(ca: &Issued, ago: Duration, days: u32, dns: &str) -> Issued {
    let from = now() - ago;
    new_serving(ca, &[dns.to_owned()], from, from + DAY * days).unwrap()
}

fn data(ca: &Issued, serving: &Issued) -> SecretData {
    SecretData {
        ca_crt: ca.cert_pem.clone().into_bytes(),
        ca_key: ca.key_pem.clone().into_bytes(),
        tls_crt: serving.cert_pem.clone().into_bytes(),
        tls_key: serving.key_pem.clone().into_bytes(),
    }
}

fn fresh() -> SecretData {
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    data(&ca, &serving(&ca, Duration::ZERO, 365, SERVICE))
}

#[derive(Debug)]
enum Want {
    Keep(Injection),
    NewServing,
    NewCa,
}

fn kind(plan: &Plan) -> String {
    match plan {
        Plan::Keep(i) => format!("Keep({i:?})"),
        Plan::NewServing(_) => "NewServing".to_owned(),
        Plan::NewCa(_) => "NewCa".to_owned(),
    }
}

#[rstest]
#[case::empty_secret(SecretData::default(), Want::NewCa)]
#[case::fresh(fresh(), Want::Keep(Injection::Always))]
#[case::serving_expires_within_the_lookahead({
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    data(&ca, &serving(&ca, DAY * 300, 365, SERVICE))
}, Want::NewServing)]
#[case::serving_expired({
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    data(&ca, &serving(&ca, DAY * 400, 365, SERVICE))
}, Want::NewServing)]
#[case::serving_for_another_service({
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    data(&ca, &serving(&ca, Duration::ZERO, 365, "other.appwrapper-system.svc"))
}, Want::NewServing)]
#[case::serving_signed_by_another_ca({
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    let other = self::ca(Duration::ZERO, 3650, "appwrapper-ca");
    data(&ca, &serving(&other, Duration::ZERO, 365, SERVICE))
}, Want::NewServing)]
#[case::serving_key_of_another_certificate({
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    let mut d = data(&ca, &serving(&ca, Duration::ZERO, 365, SERVICE));
    d.tls_key = serving(&ca, Duration::ZERO, 365, SERVICE).key_pem.into_bytes();
    d
}, Want::NewServing)]
#[case::ca_expires_within_the_lookahead({
    let ca = ca(DAY * 3600, 3650, "appwrapper-ca");
    data(&ca, &serving(&ca, Duration::ZERO, 30, SERVICE))
}, Want::NewCa)]
#[case::ca_named_otherwise({
    let ca = ca(Duration::ZERO, 3650, "someone-else");
    data(&ca, &serving(&ca, Duration::ZERO, 365, SERVICE))
}, Want::NewCa)]
#[case::ca_key_of_another_ca({
    let mut d = fresh();
    d.ca_key = ca(Duration::ZERO, 3650, "appwrapper-ca").key_pem.into_bytes();
    d
}, Want::NewCa)]
#[case::installer_certificate_without_ca_key({
    let mut d = fresh();
    d.ca_key.clear();
    d
}, Want::Keep(Injection::WhenMissing))]
#[case::installer_certificate_close_to_expiry_is_still_kept({
    let ca = ca(Duration::ZERO, 3650, "installer-ca");
    let mut d = data(&ca, &serving(&ca, DAY * 350, 365, SERVICE));
    d.ca_key.clear();
    d
}, Want::Keep(Injection::WhenMissing))]
#[case::installer_certificate_expired({
    let ca = ca(Duration::ZERO, 3650, "installer-ca");
    let mut d = data(&ca, &serving(&ca, DAY * 400, 365, SERVICE));
    d.ca_key.clear();
    d
}, Want::NewCa)]
#[case::installer_certificate_for_another_service({
    let ca = ca(Duration::ZERO, 3650, "installer-ca");
    let mut d = data(&ca, &serving(&ca, Duration::ZERO, 365, "elsewhere.svc"));
    d.ca_key.clear();
    d
}, Want::NewCa)]
fn what_the_secret_needs(#[case] data: SecretData, #[case] want: Want) {
    let got = plan(&data, &names(), now());
    assert_eq!(
        kind(&got),
        kind(&match want {
            Want::Keep(i) => Plan::Keep(i),
            Want::NewServing => Plan::NewServing(Invalid::Missing("")),
            Want::NewCa => Plan::NewCa(Invalid::Missing("")),
        }),
        "{got:?}"
    );
}

/// What the cert-controller rotator wrote (RSA keys in PKCS#1), for the reference's service
/// in `appwrapper-system`; valid from 2026-11-23 for ten years (CA) and one year (serving).
fn rotator_secret() -> SecretData {
    SecretData {
        ca_crt: include_bytes!("../testdata/ca.crt").to_vec(),
        ca_key: include_bytes!("../testdata/ca.key").to_vec(),
        tls_crt: include_bytes!("../testdata/tls.crt").to_vec(),
        tls_key: include_bytes!("../testdata/tls.key").to_vec(),
    }
}

/// 2027-01-01 and 2027-10-01.
const EARLY_2027: u64 = 1_798_761_600;
const LATE_2027: u64 = 1_822_435_200;

#[test]
fn a_secret_the_rotator_wrote_is_kept_and_its_rsa_ca_signs_the_renewal() {
    let secret = rotator_secret();
    let early = UNIX_EPOCH + Duration::from_secs(EARLY_2027);
    assert_eq!(
        plan(&secret, &names(), early),
        Plan::Keep(Injection::Always)
    );

    let late = UNIX_EPOCH + Duration::from_secs(LATE_2027);
    assert!(matches!(plan(&secret, &names(), late), Plan::NewServing(_)));
    let ca = Issued {
        cert_pem: String::from_utf8(secret.ca_crt.clone()).unwrap(),
        key_pem: String::from_utf8(secret.ca_key.clone()).unwrap(),
    };
    let renewed = new_serving(&ca, &names().serving_dns_names(), late, late + DAY * 365).unwrap();
    let mut renewed_secret = secret.clone();
    renewed_secret.tls_crt = renewed.cert_pem.into_bytes();
    renewed_secret.tls_key = renewed.key_pem.into_bytes();
    assert_eq!(
        plan(&renewed_secret, &names(), late),
        Plan::Keep(Injection::Always)
    );
}

#[test]
fn the_serving_certificate_names_the_service_and_its_fully_qualified_form() {
    let ca = ca(Duration::ZERO, 3650, "appwrapper-ca");
    let issued = new_serving(&ca, &names().serving_dns_names(), now(), now() + DAY).unwrap();
    for name in names().serving_dns_names() {
        valid_serving(
            ca.cert_pem.as_bytes(),
            issued.cert_pem.as_bytes(),
            issued.key_pem.as_bytes(),
            &name,
            now(),
        )
        .unwrap();
    }
    assert_eq!(
        names().serving_dns_names()[1],
        format!("{SERVICE}.cluster.local")
    );
}

#[test]
fn writing_keeps_other_entries_of_the_secret() {
    let existing = [("other".to_owned(), ByteString(b"x".to_vec()))].into();
    let written = fresh().written_into(Some(existing));
    assert_eq!(
        written.keys().collect::<Vec<_>>(),
        ["ca.crt", "ca.key", "other", "tls.crt", "tls.key"]
    );
    assert_eq!(
        SecretData::from_secret(Some(&written)),
        fresh_like(&written)
    );
}

fn fresh_like(written: &std::collections::BTreeMap<String, ByteString>) -> SecretData {
    SecretData {
        ca_crt: written["ca.crt"].0.clone(),
        ca_key: written["ca.key"].0.clone(),
        tls_crt: written["tls.crt"].0.clone(),
        tls_key: written["tls.key"].0.clone(),
    }
}

const CA: &[u8] = b"CA";
/// base64("CA").
const CA_B64: &str = "Q0E=";

fn configuration(bundles: &[Option<&str>]) -> Value {
    let webhooks: Vec<Value> = bundles
        .iter()
        .map(|bundle| match bundle {
            Some(b) => {
                json!({"name": "w", "clientConfig": {"caBundle": b, "service": {"name": "s"}}})
            }
            None => json!({"name": "w", "clientConfig": {"service": {"name": "s"}}}),
        })
        .collect();
    json!({"metadata": {"name": "c"}, "webhooks": webhooks})
}

#[rstest]
#[case::ours_missing(Injection::Always, &[None], true, &[Some(CA_B64)])]
#[case::ours_already_there(Injection::Always, &[Some(CA_B64)], false, &[Some(CA_B64)])]
#[case::ours_replaces_another(Injection::Always, &[Some("T0xE")], true, &[Some(CA_B64)])]
#[case::ours_every_webhook(Injection::Always, &[Some(CA_B64), None, Some("")], true, &[Some(CA_B64); 3])]
#[case::installer_missing(Injection::WhenMissing, &[None], true, &[Some(CA_B64)])]
#[case::installer_empty(Injection::WhenMissing, &[Some("")], true, &[Some(CA_B64)])]
#[case::installer_keeps_its_own(Injection::WhenMissing, &[Some("T0xE")], false, &[Some("T0xE")])]
#[case::no_webhooks(Injection::Always, &[], false, &[])]
fn ca_bundles(
    #[case] injection: Injection,
    #[case] before: &[Option<&str>],
    #[case] changed: bool,
    #[case] after: &[Option<&str>],
) {
    let mut config = configuration(before);
    assert_eq!(inject_ca_bundle(&mut config, CA, injection), changed);
    assert_eq!(config, configuration(after));
}

#[test]
fn a_configuration_without_a_webhooks_list_is_left_alone() {
    let mut config = json!({"metadata": {"name": "c"}});
    assert!(!inject_ca_bundle(&mut config, CA, Injection::Always));
    assert_eq!(config, json!({"metadata": {"name": "c"}}));
}
