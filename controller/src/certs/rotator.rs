//! The rotator: on every replica (not leader-gated), keeps the webhook Secret holding a usable
//! CA and serving certificate and both webhook configurations holding the CA. It acts when the
//! Secret or a webhook configuration changes, every 12 hours, and after a failure.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::issue::{IssueError, Issued, new_ca, new_serving};
use super::mounted::Established;
use super::plan::{
    BACKDATE, CA_VALIDITY, CHECK_EVERY, Injection, Names, Plan, SERVING_VALIDITY, SecretData,
    inject_ca_bundle, plan,
};
use crate::config::CertManagementConfig;

/// Where the certificate lives and what it names (from `certManagement`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub namespace: String,
    pub secret: String,
    pub mutating: String,
    pub validating: String,
    pub names: Names,
}

impl Settings {
    pub fn from_config(config: &CertManagementConfig) -> Self {
        Settings {
            namespace: config.namespace.clone(),
            secret: config.webhook_secret_name.clone(),
            mutating: config.mutating_webhook_config_name.clone(),
            validating: config.validating_webhook_config_name.clone(),
            names: Names {
                ca_name: config.certificate_name.clone(),
                ca_organization: config.certificate_org.clone(),
                service_dns: format!("{}.{}.svc", config.webhook_service_name, config.namespace),
            },
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("reading Secret {namespace}/{name}: {source}")]
    Read {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error(
        "Secret {namespace}/{name} does not exist; the install creates it (empty) for the certificate"
    )]
    NoSecret { namespace: String, name: String },
    #[error(transparent)]
    Issue(#[from] IssueError),
    #[error("writing the certificate into Secret {namespace}/{name}: {source}")]
    Write {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("injecting the CA into {kind} {name}: {message}")]
    Inject {
        kind: String,
        name: String,
        message: String,
    },
}

impl SyncError {
    /// Another replica wrote the Secret between our read and our write.
    fn is_conflict(&self) -> bool {
        matches!(self, SyncError::Write { source: kube::Error::Api(status), .. } if status.code == 409)
    }
}

/// A running rotator; it stops when [`Rotator::stop`] is called or it is dropped (which closes
/// its stop channel).
pub struct Rotator {
    established: Arc<Mutex<Established>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Rotator {
    pub fn start(client: Client, settings: Settings) -> Rotator {
        let established = Arc::new(Mutex::new(Established::default()));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(run(client, settings, Arc::clone(&established), stopped));
        Rotator {
            established,
            stop,
            task,
        }
    }

    /// What the rotator has established so far, for [`super::Readiness`].
    pub fn established(&self) -> Arc<Mutex<Established>> {
        Arc::clone(&self.established)
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn run(
    client: Client,
    settings: Settings,
    established: Arc<Mutex<Established>>,
    mut stopped: watch::Receiver<bool>,
) {
    tracing::info!(
        secret = %format!("{}/{}", settings.namespace, settings.secret),
        dns = %settings.names.service_dns,
        "starting the webhook certificate rotator"
    );
    let mut triggers = triggers(&client, &settings);
    let mut failures = 0u32;
    loop {
        let wait = match sync(&client, &settings, &established).await {
            Ok(()) => {
                failures = 0;
                CHECK_EVERY
            }
            Err(e) if e.is_conflict() => {
                tracing::info!(
                    "webhook certificate: another replica changed it first; reading it again"
                );
                Duration::from_millis(100)
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let delay = retry_delay(failures);
                tracing::error!("webhook certificate: {e}; retrying in {delay:?}");
                delay
            }
        };
        let triggered = tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            Some(()) = triggers.next() => true,
            () = tokio::time::sleep(wait) => false,
        };
        if triggered {
            settle(&mut triggers).await;
        }
    }
}

/// Changes to the Secret and to either webhook configuration (including our own writes, which
/// then find nothing to do).
fn triggers(client: &Client, settings: &Settings) -> BoxStream<'static, ()> {
    let named = |name: &str| watcher::Config::default().fields(&format!("metadata.name={name}"));
    let secret = watcher(
        Api::<Secret>::namespaced(client.clone(), &settings.namespace),
        named(&settings.secret),
    );
    let mutating = watcher(
        Api::<MutatingWebhookConfiguration>::all(client.clone()),
        named(&settings.mutating),
    );
    let validating = watcher(
        Api::<ValidatingWebhookConfiguration>::all(client.clone()),
        named(&settings.validating),
    );
    futures::stream::select_all([
        secret.default_backoff().map(|_| ()).boxed(),
        mutating.default_backoff().map(|_| ()).boxed(),
        validating.default_backoff().map(|_| ()).boxed(),
    ])
    .boxed()
}

/// A change usually comes with others (a watch's initial events, our own writes): take them
/// together.
async fn settle(triggers: &mut BoxStream<'static, ()>) {
    tokio::time::sleep(Duration::from_millis(200)).await;
    while let Some(Some(())) = triggers.next().now_or_never() {}
}

/// 500 ms doubling up to a minute.
fn retry_delay(failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(10);
    Duration::from_millis(500)
        .saturating_mul(1 << exponent)
        .min(Duration::from_secs(60))
}

async fn sync(
    client: &Client,
    settings: &Settings,
    established: &Mutex<Established>,
) -> Result<(), SyncError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &settings.namespace);
    let (namespace, name) = (settings.namespace.clone(), settings.secret.clone());
    let mut secret = secrets
        .get_opt(&name)
        .await
        .map_err(|source| SyncError::Read {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?
        .ok_or_else(|| SyncError::NoSecret {
            namespace: namespace.clone(),
            name: name.clone(),
        })?;
    let current = SecretData::from_secret(secret.data.as_ref());
    let now = SystemTime::now();
    let (data, injection) = match plan(&current, &settings.names, now) {
        Plan::Keep(injection) => (current, injection),
        Plan::NewServing(why) => {
            tracing::info!("issuing a new webhook serving certificate: {why}");
            let data = match with_new_serving(&current, &settings.names, now) {
                Ok(data) => data,
                Err(e) => {
                    tracing::warn!("the Secret's CA cannot sign ({e}); issuing a new CA");
                    with_new_ca(&settings.names, now)?
                }
            };
            (data, Injection::Always)
        }
        Plan::NewCa(why) => {
            tracing::info!("issuing a new webhook CA and serving certificate: {why}");
            (with_new_ca(&settings.names, now)?, Injection::Always)
        }
    };
    if data != SecretData::from_secret(secret.data.as_ref()) {
        secret.data = Some(data.written_into(secret.data.take()));
        secrets
            .replace(&name, &PostParams::default(), &secret)
            .await
            .map_err(|source| SyncError::Write {
                namespace,
                name,
                source,
            })?;
        tracing::info!("the webhook certificate is in its Secret");
    }
    let serving = Some((data.tls_crt.clone(), data.tls_key.clone()));
    if let Ok(mut e) = established.lock() {
        if e.serving != serving {
            e.injected = false;
        }
        e.serving = serving;
    }
    inject(client, settings, &data.ca_crt, injection).await?;
    if let Ok(mut e) = established.lock() {
        e.injected = true;
    }
    Ok(())
}

fn with_new_ca(names: &Names, now: SystemTime) -> Result<SecretData, IssueError> {
    let begin = now - BACKDATE;
    let ca = new_ca(
        &names.ca_name,
        &names.ca_organization,
        begin,
        now + CA_VALIDITY,
    )?;
    let serving = new_serving(
        &ca,
        &names.serving_dns_names(),
        begin,
        now + SERVING_VALIDITY,
    )?;
    Ok(secret_data(&ca, serving))
}

fn with_new_serving(
    current: &SecretData,
    names: &Names,
    now: SystemTime,
) -> Result<SecretData, IssueError> {
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let ca = Issued {
        cert_pem: text(&current.ca_crt),
        key_pem: text(&current.ca_key),
    };
    let serving = new_serving(
        &ca,
        &names.serving_dns_names(),
        now - BACKDATE,
        now + SERVING_VALIDITY,
    )?;
    Ok(SecretData {
        ca_crt: current.ca_crt.clone(),
        ca_key: current.ca_key.clone(),
        ..secret_data(&ca, serving)
    })
}

fn secret_data(ca: &Issued, serving: Issued) -> SecretData {
    SecretData {
        ca_crt: ca.cert_pem.clone().into_bytes(),
        ca_key: ca.key_pem.clone().into_bytes(),
        tls_crt: serving.cert_pem.into_bytes(),
        tls_key: serving.key_pem.into_bytes(),
    }
}

/// Both webhook configurations; a missing one is skipped (the rotator logs it and carries on),
/// and a failure with one does not keep the other from being done.
async fn inject(
    client: &Client,
    settings: &Settings,
    ca: &[u8],
    injection: Injection,
) -> Result<(), SyncError> {
    let configurations = [
        (
            ApiResource::erase::<ValidatingWebhookConfiguration>(&()),
            &settings.validating,
        ),
        (
            ApiResource::erase::<MutatingWebhookConfiguration>(&()),
            &settings.mutating,
        ),
    ];
    let mut failure = None;
    for (resource, name) in configurations {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        if let Err(message) = inject_into(&api, name, ca, injection).await {
            let error = SyncError::Inject {
                kind: resource.kind.clone(),
                name: name.clone(),
                message,
            };
            tracing::warn!("{error}");
            failure = Some(error);
        }
    }
    failure.map_or(Ok(()), Err)
}

/// The configuration is replaced (the install grants `update`, not `patch`) as JSON, so that
/// fields this client does not know survive.
async fn inject_into(
    api: &Api<DynamicObject>,
    name: &str,
    ca: &[u8],
    injection: Injection,
) -> Result<(), String> {
    let Some(object) = api.get_opt(name).await.map_err(|e| e.to_string())? else {
        tracing::warn!("webhook configuration {name} not found: its CA bundle cannot be set");
        return Ok(());
    };
    if object.meta().deletion_timestamp.is_some() {
        tracing::info!("webhook configuration {name} is being deleted: its CA bundle is left");
        return Ok(());
    }
    let mut json = serde_json::to_value(&object).map_err(|e| e.to_string())?;
    if !inject_ca_bundle(&mut json, ca, injection) {
        return Ok(());
    }
    let updated: DynamicObject = serde_json::from_value(json).map_err(|e| e.to_string())?;
    api.replace(name, &PostParams::default(), &updated)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!("injected the webhook CA into {name}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_half_a_second_to_a_minute() {
        assert_eq!(retry_delay(1), Duration::from_millis(500));
        assert_eq!(retry_delay(2), Duration::from_secs(1));
        assert_eq!(retry_delay(5), Duration::from_secs(8));
        assert_eq!(retry_delay(40), Duration::from_secs(60));
    }

    #[test]
    fn the_certificate_names_the_service_in_the_operator_namespace() {
        let config = CertManagementConfig {
            namespace: "appwrapper-system".to_owned(),
            ..Default::default()
        };
        let settings = Settings::from_config(&config);
        assert_eq!(
            settings.names.service_dns,
            "appwrapper-webhook-service.appwrapper-system.svc"
        );
        assert_eq!(settings.secret, "appwrapper-webhook-server-cert");
        assert_eq!(settings.names.ca_name, "appwrapper-ca");
        assert_eq!(settings.names.ca_organization, "appwrapper");
    }

    #[test]
    fn a_new_serving_certificate_keeps_the_ca() {
        let now = SystemTime::now();
        let names = Settings::from_config(&CertManagementConfig {
            namespace: "ns".to_owned(),
            ..Default::default()
        })
        .names;
        let first = with_new_ca(&names, now).unwrap();
        assert_eq!(plan(&first, &names, now), Plan::Keep(Injection::Always));
        let renewed = with_new_serving(&first, &names, now).unwrap();
        assert_eq!(
            (&renewed.ca_crt, &renewed.ca_key),
            (&first.ca_crt, &first.ca_key)
        );
        assert_ne!(renewed.tls_crt, first.tls_crt);
        assert_eq!(plan(&renewed, &names, now), Plan::Keep(Injection::Always));
    }
}
