//! Chaos: the controller under test, the Kueue manager, and the local cluster's API server and
//! etcd SIGKILLed at seeded moments while the load runs, each started again after a seeded
//! pause; the leader of two replicas killed or frozen past its lease; then the verdict.

pub mod canary;
pub mod schedule;
pub mod verdict;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clusters::LocalCluster;
use clusters::kueue::Kueue;
use clusters::providers::local::ControlPlanePart;
use environment::under_test::ControllerUnderTest;
use k8s_openapi::api::coordination::v1::Lease;

use schedule::{Kill, Target};
use serde::Serialize;

/// How many faults of each kind a chaos run has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// SIGKILLs of the controller or of Kueue.
    pub kills: usize,
    /// SIGSTOPs of the controller, each woken after a seeded 2 to 10 s.
    pub pauses: usize,
    pub apiserver_restarts: usize,
    pub etcd_restarts: usize,
    /// Failovers between two replicas of our controller: the leader SIGKILLed, or frozen with
    /// SIGSTOP until the standby leads and then woken.
    pub failovers: usize,
}

/// The second replica, and the Lease the two elect their leader on.
pub struct Standby<'a> {
    pub replica: &'a mut ControllerUnderTest,
    pub leases: kube::Api<Lease>,
    pub lease: String,
}

/// What the kills reach.
pub struct Targets<'a> {
    pub controller: &'a mut ControllerUnderTest,
    /// The client the controller is started with (the embedded one runs on it).
    pub controller_client: &'a kube::Client,
    pub kueue: &'a mut Kueue,
    /// Its API server and etcd.
    pub cluster: &'a mut LocalCluster,
    /// Where the usage sampler finds the controller's process after a restart.
    pub pid: &'a AtomicU32,
    /// The instant the run's timeline counts from.
    pub origin: Instant,
    /// With failovers: the other replica of the controller.
    pub standby: Option<Standby<'a>>,
}

/// A target down, in seconds on the run's timeline: from its kill until it served again (or
/// until its restart was given up).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Outage {
    pub what: Down,
    pub from: f64,
    pub to: f64,
}

/// What an [`Outage`] took down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Down {
    /// The target of a scheduled fault.
    Fault(Target),
    /// A part of the control plane (kube-scheduler, kube-controller-manager, KWOK) that exited
    /// by itself: from the last look that found it running until it was started again.
    Exited,
}

impl Down {
    /// The controller under test's own outage, which must not make it reset a workload.
    pub fn is_controller(self) -> bool {
        matches!(self, Down::Fault(target) if target.is_controller())
    }
}

/// What the kills did.
#[derive(Debug, Default)]
pub struct Unleashed {
    pub outages: Vec<Outage>,
    /// The kills or restarts that did not go through.
    pub faults: Vec<String>,
    /// Parts of the control plane that exited by themselves and were started again, as a
    /// kubelet restarts its static pods.
    pub revived: Vec<String>,
}

/// `5 in all: 3× the controller, 2× Kueue, spread over at least 14 s`.
pub fn describe(schedule: &[Kill]) -> String {
    let count = |t: Target| schedule.iter().filter(|k| k.target == t).count();
    let seconds: u64 = schedule.iter().map(|k| k.after_ms + k.down_ms).sum::<u64>() / 1000;
    let mut parts = vec![
        format!("{}× the controller", count(Target::Controller)),
        format!("{}× Kueue", count(Target::Kueue)),
    ];
    for (target, what) in [
        (Target::ApiServer, "the API server"),
        (Target::Etcd, "etcd"),
        (Target::Leader, "the leader killed"),
        (Target::PausedLeader, "the leader paused"),
        (Target::PausedController, "the controller paused"),
    ] {
        if count(target) > 0 {
            parts.push(format!("{}× {what}", count(target)));
        }
    }
    format!(
        "{} in all: {}, spread over at least {seconds} s",
        schedule.len(),
        parts.join(", ")
    )
}

/// Carries out `schedule`, then keeps the control plane running until `finished` is notified.
pub async fn unleash(
    schedule: &[Kill],
    targets: Targets<'_>,
    finished: &tokio::sync::Notify,
) -> Unleashed {
    let Targets {
        controller,
        controller_client,
        kueue,
        cluster,
        pid,
        origin,
        mut standby,
    } = targets;
    let started = Instant::now();
    let mut unleashed = Unleashed::default();
    let mut looked = origin.elapsed().as_secs_f64();
    for (i, kill) in schedule.iter().enumerate() {
        // Looks for exited parts of the control plane every second, so that their outages
        // are known to about a second.
        let next = Instant::now() + Duration::from_millis(kill.after_ms);
        while Instant::now() < next {
            tokio::time::sleep(LOOK_EVERY.min(next - Instant::now())).await;
            revive(cluster, origin, &mut unleashed, &mut looked);
        }
        let at = started.elapsed().as_secs_f64();
        let from = origin.elapsed().as_secs_f64();
        let down = Duration::from_millis(kill.down_ms);
        let outcome = match kill.target {
            Target::Controller => {
                restart_controller(controller, controller_client, pid, down).await
            }
            Target::Kueue => restart_kueue(kueue, down).await,
            Target::ApiServer => {
                let part = ControlPlanePart::ApiServer;
                restart_control_plane(cluster, controller_client, part, down, i + 1).await
            }
            Target::Etcd => {
                let part = ControlPlanePart::Etcd;
                restart_control_plane(cluster, controller_client, part, down, i + 1).await
            }
            Target::Leader | Target::PausedLeader => match standby.as_mut() {
                Some(standby) => {
                    let pause = kill.target == Target::PausedLeader;
                    failover(controller, standby, controller_client, pid, pause).await
                }
                None => Err(anyhow::anyhow!("a failover needs two replicas")),
            },
            Target::PausedController => pause_controller(controller, down).await,
        };
        let what = match kill.target {
            Target::Controller => "controller",
            Target::Kueue => "Kueue",
            Target::ApiServer => "the API server",
            Target::Etcd => "etcd",
            Target::Leader | Target::PausedLeader => "the leading replica",
            Target::PausedController => "controller",
        };
        let verb = match kill.target {
            Target::PausedLeader | Target::PausedController => "paused",
            _ => "killed",
        };
        unleashed.outages.push(Outage {
            what: Down::Fault(kill.target),
            from,
            to: origin.elapsed().as_secs_f64(),
        });
        match outcome {
            Ok(took) => println!(
                "  chaos {}/{}: {verb} {what} at {at:.1}s, down {:.1}s, serving again after {:.1}s",
                i + 1,
                schedule.len(),
                down.as_secs_f64(),
                took.as_secs_f64()
            ),
            Err(e) => {
                println!("  chaos {}/{}: {what}: {e:#}", i + 1, schedule.len());
                unleashed
                    .faults
                    .push(format!("kill {} ({what}): {e:#}", i + 1));
            }
        }
        revive(cluster, origin, &mut unleashed, &mut looked);
        revive_replicas(
            controller,
            standby.as_mut(),
            controller_client,
            origin,
            &mut unleashed,
        )
        .await;
    }
    loop {
        tokio::select! {
            _ = finished.notified() => break,
            _ = tokio::time::sleep(Duration::from_secs(2)) => {
                revive(cluster, origin, &mut unleashed, &mut looked);
                revive_replicas(controller, standby.as_mut(), controller_client, origin, &mut unleashed)
                    .await;
            }
        }
    }
    // A replica paused by the last fault may yet find its Lease lost and exit: the cleanup
    // after the load needs one that leads.
    if standby.is_some() {
        let settle = Instant::now() + RENEW_DEADLINE + Duration::from_secs(2);
        while Instant::now() < settle {
            tokio::time::sleep(Duration::from_millis(500)).await;
            revive_replicas(
                controller,
                standby.as_mut(),
                controller_client,
                origin,
                &mut unleashed,
            )
            .await;
        }
    }
    unleashed
}

/// Starts again a replica of the controller that exited by itself (one that could not renew
/// its Lease in time, the API server being down, stops as controller-runtime's does), as its
/// Deployment would.
/// Nothing without a standby: a lone controller is restarted by its kills only.
async fn revive_replicas(
    primary: &mut ControllerUnderTest,
    standby: Option<&mut Standby<'_>>,
    client: &kube::Client,
    origin: Instant,
    unleashed: &mut Unleashed,
) {
    let Some(standby) = standby else {
        return;
    };
    for replica in [primary, &mut *standby.replica] {
        let Some(report) = replica.exit_report() else {
            continue;
        };
        let name = replica.identity().unwrap_or("a replica").to_owned();
        let at = origin.elapsed().as_secs_f64();
        match replica.start(client).await {
            Ok(()) => {
                println!("  chaos: started {name} again at {at:.1}s, as its Deployment would");
                let first = report.lines().next().unwrap_or_default().to_owned();
                unleashed
                    .revived
                    .push(format!("{name}, at {at:.1}s: {first}"));
            }
            Err(e) => unleashed
                .faults
                .push(format!("starting {name} again: {e:#}\n{report}")),
        }
    }
}

/// How often the waits between faults look for exited parts of the control plane.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Starts again what of the control plane has exited since the last look (at `looked` on the
/// run's timeline), and counts it down since then.
fn revive(
    cluster: &mut LocalCluster,
    origin: Instant,
    unleashed: &mut Unleashed,
    looked: &mut f64,
) {
    let result = cluster.revive_exited();
    let at = origin.elapsed().as_secs_f64();
    match result {
        Ok(revived) => {
            for what in revived {
                println!("  chaos: started {what} again at {at:.1}s, as its kubelet would");
                unleashed.revived.push(format!("{what}, at {at:.1}s"));
                unleashed.outages.push(Outage {
                    what: Down::Exited,
                    from: *looked,
                    to: at,
                });
            }
        }
        Err(e) => unleashed.faults.push(format!(
            "starting an exited part of the control plane again: {e}"
        )),
    }
    *looked = at;
}

/// SIGKILLs `part`, waits `down`, starts it again; returns how long from the kill until the
/// cluster runs pods again (a canary pod runs), which is when the outage ends for workloads.
async fn restart_control_plane(
    cluster: &mut LocalCluster,
    client: &kube::Client,
    part: ControlPlanePart,
    down: Duration,
    fault: usize,
) -> anyhow::Result<Duration> {
    let answered = cluster.restart_part(part, down).await?;
    let name = format!("awconf-chaos-canary-{fault}");
    let running = canary::runs_pods_again(client, &name, CANARY_WITHIN).await?;
    Ok(answered + running)
}

/// How long a canary may take to run after a restart before the restart counts as failed.
const CANARY_WITHIN: Duration = Duration::from_secs(120);

/// SIGKILL, `down` of nothing, start; returns how long from the kill to running again.
async fn restart_controller(
    controller: &mut ControllerUnderTest,
    client: &kube::Client,
    pid: &AtomicU32,
    down: Duration,
) -> anyhow::Result<Duration> {
    let killed = Instant::now();
    controller.kill().await?;
    pid.store(0, Ordering::SeqCst);
    tokio::time::sleep(down).await;
    controller.start(client).await?;
    pid.store(controller.pid().unwrap_or(0), Ordering::SeqCst);
    Ok(killed.elapsed())
}

/// The lease timing of the replicas in a chaos run with failovers: short enough that a
/// failover costs seconds, with the renew deadline well inside the lease duration.
const LEASE_DURATION: Duration = Duration::from_secs(6);
const RENEW_DEADLINE: Duration = Duration::from_secs(4);
const RETRY_PERIOD: Duration = Duration::from_secs(1);
const LEASE_NAMESPACE: &str = "kube-system";

/// Restarts `primary` with leader election and starts a second replica beside it (its files
/// under `dir`), as a Deployment with two replicas runs them; returns the standby and the
/// Lease they share.
pub async fn two_replicas(
    primary: &mut ControllerUnderTest,
    client: &kube::Client,
    watch_client: &kube::Client,
    dir: &std::path::Path,
) -> anyhow::Result<(ControllerUnderTest, kube::Api<Lease>, String)> {
    use appwrapper_controller::duration::GoDuration;
    let mut config = primary.config().clone();
    let manager = &mut config.controller_manager;
    manager.leader_election = true;
    manager.leader_election_namespace = LEASE_NAMESPACE.into();
    manager.lease_duration = GoDuration::from_std(LEASE_DURATION);
    manager.renew_deadline = GoDuration::from_std(RENEW_DEADLINE);
    manager.retry_period = GoDuration::from_std(RETRY_PERIOD);
    let lease = manager.leader_election_id.clone();
    primary.set_identity("awconf-primary");
    primary.restart_with(client, watch_client, config).await?;
    let mut standby = primary.replica("awconf-standby", dir)?;
    standby.start(watch_client).await?;
    let leases = kube::Api::namespaced(client.clone(), LEASE_NAMESPACE);
    Ok((standby, leases, lease))
}

impl<'a> Standby<'a> {
    pub fn new(
        replica: &'a mut ControllerUnderTest,
        leases: kube::Api<Lease>,
        lease: String,
    ) -> Self {
        Standby {
            replica,
            leases,
            lease,
        }
    }
}

/// The leading replica SIGKILLed, or frozen until the other holds the Lease and then woken,
/// when it must stop by itself (`leader election lost`) without having led again; then it is
/// started again as the standby, as its Deployment would. Returns how long from the fault
/// until both replicas ran again.
async fn failover(
    primary: &mut ControllerUnderTest,
    standby: &mut Standby<'_>,
    client: &kube::Client,
    pid: &AtomicU32,
    pause: bool,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let takeover = LEASE_DURATION * 3 + Duration::from_secs(10);
    let (leases, lease) = (&standby.leases, standby.lease.as_str());
    let holder = wait_for_holder(leases, lease, None, takeover).await?;
    let primary_leads = primary
        .identity()
        .is_some_and(|name| holder.starts_with(&format!("{name}_")));
    let (leader, other) = if primary_leads {
        (primary, &mut *standby.replica)
    } else {
        (&mut *standby.replica, primary)
    };
    let other_name = other.identity().unwrap_or_default().to_owned();
    // The other may have exited since the last look (a Lease it could not renew while the API
    // server was down): it must run to take over, as its Deployment would have restarted it.
    other.start(client).await?;
    if pause {
        anyhow::ensure!(leader.pause(), "the leading replica is not running");
    } else {
        leader.kill().await?;
    }
    let taken = wait_for_holder(leases, lease, Some(&other_name), takeover).await;
    if pause {
        leader.resume();
    }
    taken?;
    if pause {
        let deadline = RENEW_DEADLINE + Duration::from_secs(10);
        let status = leader.wait_exit(deadline).await.ok_or_else(|| {
            anyhow::anyhow!(
                "the paused leader still ran {deadline:?} after it woke, with another replica \
                 holding the Lease"
            )
        })?;
        anyhow::ensure!(
            !status.success(),
            "the paused leader exited with {status} instead of failing on the lost Lease"
        );
        let log = leader
            .log_path()
            .map(|path| std::fs::read_to_string(path).unwrap_or_default())
            .unwrap_or_default();
        anyhow::ensure!(
            log.contains("leader election lost"),
            "the paused leader exited ({status}) without saying it lost the Lease"
        );
    }
    leader.start(client).await?;
    if primary_leads {
        pid.store(leader.pid().unwrap_or(0), Ordering::SeqCst);
    }
    Ok(started.elapsed())
}

/// The Lease's holder identity once it is set and, with `prefix`, once it is that replica's.
async fn wait_for_holder(
    leases: &kube::Api<Lease>,
    lease: &str,
    prefix: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match leases.get_opt(lease).await {
            Ok(Some(lease)) => {
                let holder = lease
                    .spec
                    .and_then(|s| s.holder_identity)
                    .unwrap_or_default();
                let wanted = match prefix {
                    Some(name) => holder.starts_with(&format!("{name}_")),
                    None => !holder.is_empty(),
                };
                if wanted {
                    return Ok(holder);
                }
                format!("held by {holder:?}")
            }
            Ok(None) => "no Lease".into(),
            Err(e) => e.to_string(),
        };
        anyhow::ensure!(
            Instant::now() < deadline,
            "the Lease {lease} did not pass to {} within {timeout:?}: {last}",
            prefix.unwrap_or("a replica")
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// SIGSTOP, `down` frozen, SIGCONT: the controller is cut off from the API server (its
/// watches and writes wait) while Kueue and the rest of the cluster work on.
async fn pause_controller(
    controller: &mut ControllerUnderTest,
    down: Duration,
) -> anyhow::Result<Duration> {
    let paused = Instant::now();
    anyhow::ensure!(controller.pause(), "the controller is not running");
    tokio::time::sleep(down).await;
    controller.resume();
    Ok(paused.elapsed())
}

/// SIGKILL, `down` of nothing, start and wait until its webhooks answer.
async fn restart_kueue(kueue: &mut Kueue, down: Duration) -> anyhow::Result<Duration> {
    let killed = Instant::now();
    kueue.kill();
    tokio::time::sleep(down).await;
    if let Err(first) = kueue.restart().await {
        tracing::warn!("Kueue did not come back at once ({first}); trying again");
        kueue.restart().await?;
    }
    Ok(killed.elapsed())
}
