//! What to do with the webhook Secret at a given time, and how the webhook configurations get
//! its CA: the cert-controller rotator's rules, with the rotator's default periods, except that
//! a certificate an installer provided (no `ca.key`) is kept while it is valid.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use serde_json::Value;

use super::validity::{Invalid, valid_ca, valid_serving};

pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const TLS_CERT: &str = "tls.crt";
pub const TLS_KEY: &str = "tls.key";

const DAY: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a new CA is valid.
pub const CA_VALIDITY: Duration = DAY.saturating_mul(10 * 365);
/// How long a new serving certificate is valid.
pub const SERVING_VALIDITY: Duration = DAY.saturating_mul(365);
/// Certificates are renewed when they would not be valid this much later.
pub const LOOKAHEAD: Duration = DAY.saturating_mul(90);
/// How often the certificates are checked without anything else prompting it.
pub const CHECK_EVERY: Duration = Duration::from_secs(12 * 60 * 60);
/// New certificates are valid from this long before they are issued (clock skew).
pub const BACKDATE: Duration = Duration::from_secs(60 * 60);

/// The four entries of the Secret; an absent entry is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretData {
    pub ca_crt: Vec<u8>,
    pub ca_key: Vec<u8>,
    pub tls_crt: Vec<u8>,
    pub tls_key: Vec<u8>,
}

impl SecretData {
    pub fn from_secret(data: Option<&BTreeMap<String, ByteString>>) -> Self {
        let entry = |key: &str| {
            data.and_then(|d| d.get(key))
                .map(|b| b.0.clone())
                .unwrap_or_default()
        };
        SecretData {
            ca_crt: entry(CA_CERT),
            ca_key: entry(CA_KEY),
            tls_crt: entry(TLS_CERT),
            tls_key: entry(TLS_KEY),
        }
    }

    /// `data` with the four entries replaced and every other entry kept.
    pub fn written_into(
        &self,
        data: Option<BTreeMap<String, ByteString>>,
    ) -> BTreeMap<String, ByteString> {
        let mut data = data.unwrap_or_default();
        for (key, value) in [
            (CA_CERT, &self.ca_crt),
            (CA_KEY, &self.ca_key),
            (TLS_CERT, &self.tls_crt),
            (TLS_KEY, &self.tls_key),
        ] {
            data.insert(key.to_owned(), ByteString(value.clone()));
        }
        data
    }
}

/// The names the certificates must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    /// `certManagement.certificateName`: the CA's common and DNS name.
    pub ca_name: String,
    pub ca_organization: String,
    /// `<webhookServiceName>.<namespace>.svc`, the name the API server calls.
    pub service_dns: String,
}

impl Names {
    /// What the serving certificate names: the service as the API server calls it, and its
    /// fully qualified form.
    pub fn serving_dns_names(&self) -> Vec<String> {
        vec![
            self.service_dns.clone(),
            format!("{}.cluster.local", self.service_dns),
        ]
    }
}

/// How the webhook configurations get the Secret's `ca.crt` as their caBundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injection {
    /// Our own CA: every webhook's caBundle is kept equal to it.
    Always,
    /// An installer's certificate: a webhook without a caBundle gets it; the installer's own
    /// caBundle is left alone.
    WhenMissing,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    Keep(Injection),
    /// A new serving certificate signed by the Secret's CA.
    NewServing(Invalid),
    /// A new CA and a new serving certificate.
    NewCa(Invalid),
}

pub fn plan(data: &SecretData, names: &Names, now: SystemTime) -> Plan {
    let serving_at = |at| {
        valid_serving(
            &data.ca_crt,
            &data.tls_crt,
            &data.tls_key,
            &names.service_dns,
            at,
        )
    };
    if data.ca_key.is_empty() && serving_at(now).is_ok() {
        return Plan::Keep(Injection::WhenMissing);
    }
    let later = now + LOOKAHEAD;
    if let Err(why) = valid_ca(&data.ca_crt, &data.ca_key, &names.ca_name, later) {
        return Plan::NewCa(why);
    }
    match serving_at(later) {
        Err(why) => Plan::NewServing(why),
        Ok(()) => Plan::Keep(Injection::Always),
    }
}

/// Sets the caBundle of every webhook of a webhook configuration (as JSON) that `injection`
/// says should get `ca`; returns whether anything changed.
pub fn inject_ca_bundle(configuration: &mut Value, ca: &[u8], injection: Injection) -> bool {
    let Some(webhooks) = configuration
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let wanted = Value::String(encode(ca));
    let mut changed = false;
    for webhook in webhooks {
        let Some(client_config) = webhook.as_object_mut().map(|w| {
            w.entry("clientConfig")
                .or_insert_with(|| Value::Object(Default::default()))
        }) else {
            continue;
        };
        let Some(client_config) = client_config.as_object_mut() else {
            continue;
        };
        let current = client_config.get("caBundle");
        let missing = current.is_none_or(|c| c.as_str().is_none_or(str::is_empty));
        let inject = match injection {
            Injection::Always => current != Some(&wanted),
            Injection::WhenMissing => missing,
        };
        if inject {
            client_config.insert("caBundle".to_owned(), wanted.clone());
            changed = true;
        }
    }
    changed
}

/// The JSON form of bytes in the API: base64.
fn encode(bytes: &[u8]) -> String {
    match serde_json::to_value(ByteString(bytes.to_vec())) {
        Ok(Value::String(text)) => text,
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
