//! Leader election on a `coordination.k8s.io/v1` Lease, after client-go's: a candidate takes
//! the Lease once its record has not changed for the lease duration (timed on the candidate's
//! own clock, so clock skew does not matter), the leader renews every retry period, and it
//! stops leading when it could not renew within the renew deadline. Its writes go through a
//! [`fence::Fence`] that closes at the renew deadline, even while the process is paused.

pub mod fence;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::config::Config;
use fence::Fence;

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error(
        "no namespace for the leader-election Lease: set controllerManager.leaderElectionNamespace, certManagement.namespace or the NAMESPACE environment variable"
    )]
    NoNamespace,
    #[error("leader election lost: Lease {namespace}/{name} not renewed within {deadline:?}")]
    Lost {
        namespace: String,
        name: String,
        deadline: Duration,
    },
}

#[derive(Clone, Debug)]
pub struct LeaseSettings {
    pub namespace: String,
    pub name: String,
    /// This replica's name in `holderIdentity`; unique per process.
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl LeaseSettings {
    pub fn from_config(config: &Config) -> Result<Self, LeaderError> {
        let manager = &config.controller_manager;
        Ok(LeaseSettings {
            namespace: lease_namespace(config).ok_or(LeaderError::NoNamespace)?,
            name: manager.leader_election_id.clone(),
            identity: unique_identity(),
            lease_duration: manager.lease_duration.to_std(),
            renew_deadline: manager.renew_deadline.to_std(),
            retry_period: manager.retry_period.to_std(),
        })
    }
}

/// The Lease namespace: `controllerManager.leaderElectionNamespace`, else
/// `certManagement.namespace`, else the operator's namespace.
pub fn lease_namespace(config: &Config) -> Option<String> {
    [
        &config.controller_manager.leader_election_namespace,
        &config.cert_management.namespace,
    ]
    .into_iter()
    .map(|ns| ns.trim())
    .find(|ns| !ns.is_empty())
    .map(ToOwned::to_owned)
    .or_else(crate::namespace::operator_namespace)
}

/// `<hostname>_<random>`, like controller-runtime's default identity.
fn unique_identity() -> String {
    use std::hash::{BuildHasher, RandomState};
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "appwrapper-controller".to_owned());
    let random = RandomState::new().hash_one((std::process::id(), Instant::now()));
    format!("{host}_{random:016x}")
}

pub struct LeaderElector {
    api: Api<Lease>,
    settings: LeaseSettings,
    /// The last Lease record seen and when it was first seen in that state.
    observed: Option<(LeaseSpec, Instant)>,
    fence: Arc<Fence>,
}

enum Ended {
    Finished,
    Stopped,
    Lost(LeaderError),
}

impl LeaderElector {
    pub fn new(client: Client, settings: LeaseSettings) -> Self {
        LeaderElector {
            api: Api::namespaced(client, &settings.namespace),
            fence: Arc::new(Fence::new(settings.renew_deadline)),
            settings,
            observed: None,
        }
    }

    /// Open while this replica surely holds the Lease: give the work a
    /// [`fence::fenced_client`] of it.
    pub fn fence(&self) -> Arc<Fence> {
        Arc::clone(&self.fence)
    }

    pub fn identity(&self) -> &str {
        &self.settings.identity
    }

    /// Waits for the Lease, runs `work` while holding it, and stops `work` (through the
    /// receiver it is given) when `stop` fires or the Lease is lost. The Lease is released on a
    /// requested stop, so that a standby takes over at once.
    pub async fn lead<F, Fut>(
        mut self,
        stop: impl Future<Output = ()>,
        work: F,
    ) -> Result<(), LeaderError>
    where
        F: FnOnce(oneshot::Receiver<()>) -> Fut,
        Fut: Future<Output = ()>,
    {
        let mut stop = std::pin::pin!(stop);
        tokio::select! {
            () = &mut stop => return Ok(()),
            () = self.acquire() => {}
        }
        tracing::info!(
            lease = %self.settings.name,
            identity = %self.settings.identity,
            "acquired the leader-election Lease"
        );
        let (quit, quitting) = oneshot::channel::<()>();
        let mut work = std::pin::pin!(work(quitting));
        let ended = tokio::select! {
            () = &mut work => Ended::Finished,
            () = &mut stop => Ended::Stopped,
            lost = self.hold() => Ended::Lost(lost),
        };
        if let Ended::Lost(lost) = &ended {
            self.fence.close();
            tracing::error!("{lost}; stopping");
        }
        let _ = quit.send(());
        if !matches!(ended, Ended::Finished) {
            work.await;
        }
        match ended {
            Ended::Lost(lost) => Err(lost),
            Ended::Finished | Ended::Stopped => {
                self.release().await;
                Ok(())
            }
        }
    }

    /// Returns once this replica holds the Lease.
    pub async fn acquire(&mut self) {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => tracing::warn!("leader election: {e}"),
            }
            tokio::time::sleep(self.settings.retry_period).await;
        }
    }

    /// Renews the Lease until the fence closes (no renewal began within the renew deadline);
    /// returns why leading ended. Leading ends when writes stop, on the same clock.
    pub async fn hold(&mut self) -> LeaderError {
        loop {
            tokio::time::sleep(self.settings.retry_period).await;
            let left = self.fence.remaining();
            match tokio::time::timeout(left, self.try_acquire_or_renew()).await {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => tracing::warn!("leader election: the Lease is held by another"),
                Ok(Err(e)) => tracing::warn!("leader election: renewing: {e}"),
                Err(_) => tracing::warn!("leader election: renewing timed out"),
            }
            if !self.fence.is_open() {
                return LeaderError::Lost {
                    namespace: self.settings.namespace.clone(),
                    name: self.settings.name.clone(),
                    deadline: self.settings.renew_deadline,
                };
            }
        }
    }

    /// Gives the Lease up if this replica holds it.
    pub async fn release(&mut self) {
        self.fence.close();
        let Ok(Some(mut lease)) = self.api.get_opt(&self.settings.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_default();
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return;
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        spec.acquire_time = Some(now.clone());
        spec.renew_time = Some(now);
        match self
            .api
            .replace(&self.settings.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!("released the leader-election Lease"),
            Err(e) => tracing::warn!("leader election: releasing: {e}"),
        }
    }

    /// Whether this replica holds the Lease now; a success opens the fence from the moment
    /// the attempt began, so that an answer that arrives late (the process was paused) grants
    /// nothing beyond what the API server granted.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let attempt = Instant::now();
        let held = self.acquire_or_renew().await;
        if let Ok(true) = held {
            self.fence.renewed(attempt);
        }
        held
    }

    async fn acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let name = self.settings.name.clone();
        let now = MicroTime(Timestamp::now());
        let Some(mut lease) = self.api.get_opt(&name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name),
                    namespace: Some(self.settings.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(self.record(None, now)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(created.spec.unwrap_or_default());
                    Ok(true)
                }
                Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(false),
                Err(e) => Err(e),
            };
        };
        let current = lease.spec.clone().unwrap_or_default();
        let first_seen = self.observe(current.clone());
        let holder = current.holder_identity.as_deref().unwrap_or_default();
        if !holder.is_empty() && holder != self.settings.identity {
            let duration = current
                .lease_duration_seconds
                .map_or(self.settings.lease_duration, |s| {
                    Duration::from_secs(u64::try_from(s).unwrap_or(0))
                });
            if first_seen.elapsed() < duration {
                return Ok(false);
            }
        }
        lease.spec = Some(self.record(Some(&current), now));
        match self
            .api
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(updated.spec.unwrap_or_default());
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Remembers `spec`; returns when this exact record was first seen.
    fn observe(&mut self, spec: LeaseSpec) -> Instant {
        match &self.observed {
            Some((seen, since)) if *seen == spec => *since,
            _ => {
                let now = Instant::now();
                self.observed = Some((spec, now));
                now
            }
        }
    }

    fn record(&self, previous: Option<&LeaseSpec>, now: MicroTime) -> LeaseSpec {
        let identity = &self.settings.identity;
        let held = previous.filter(|p| p.holder_identity.as_ref() == Some(identity));
        let transitions = match (previous, held) {
            (_, Some(p)) => p.lease_transitions.unwrap_or(0),
            (Some(p), None) => p.lease_transitions.unwrap_or(0).saturating_add(1),
            (None, None) => 0,
        };
        LeaseSpec {
            holder_identity: Some(identity.clone()),
            lease_duration_seconds: Some(whole_seconds(self.settings.lease_duration)),
            acquire_time: held
                .and_then(|p| p.acquire_time.clone())
                .or_else(|| Some(now.clone())),
            renew_time: Some(now),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }
}

/// Seconds, rounded up, at least 1.
fn whole_seconds(d: Duration) -> i32 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs.max(1)).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_durations_are_whole_seconds_rounded_up() {
        assert_eq!(whole_seconds(Duration::from_secs(15)), 15);
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(whole_seconds(Duration::ZERO), 1);
    }

    #[test]
    fn namespace_comes_from_the_lease_setting_first() {
        let mut config = Config::default();
        config.cert_management.namespace = "appwrapper-system".into();
        assert_eq!(
            lease_namespace(&config).as_deref(),
            Some("appwrapper-system")
        );
        config.controller_manager.leader_election_namespace = "ops".into();
        assert_eq!(lease_namespace(&config).as_deref(), Some("ops"));
    }
}
