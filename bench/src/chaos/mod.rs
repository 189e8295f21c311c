//! Chaos: the controller under test, the Kueue manager, and the local cluster's API server and
//! etcd SIGKILLed at seeded moments while the load runs, each started again after a seeded
//! pause; then the verdict.

pub mod schedule;
pub mod verdict;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clusters::LocalCluster;
use clusters::kueue::Kueue;
use clusters::local::ControlPlanePart;
use conformance_steps::controller::ControllerUnderTest;

use schedule::{Kill, Target};
use serde::Serialize;

/// How many faults of each kind a chaos run has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// SIGKILLs of the controller or of Kueue.
    pub kills: usize,
    pub apiserver_restarts: usize,
    pub etcd_restarts: usize,
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
}

/// A target down, in seconds on the run's timeline: from its kill until it served again (or
/// until its restart was given up).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Outage {
    pub target: Target,
    pub from: f64,
    pub to: f64,
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
    } = targets;
    let started = Instant::now();
    let mut unleashed = Unleashed::default();
    for (i, kill) in schedule.iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(kill.after_ms)).await;
        let at = started.elapsed().as_secs_f64();
        let from = origin.elapsed().as_secs_f64();
        let down = Duration::from_millis(kill.down_ms);
        let outcome = match kill.target {
            Target::Controller => {
                restart_controller(controller, controller_client, pid, down).await
            }
            Target::Kueue => restart_kueue(kueue, down).await,
            Target::ApiServer => cluster
                .restart_part(ControlPlanePart::ApiServer, down)
                .await
                .map_err(anyhow::Error::from),
            Target::Etcd => cluster
                .restart_part(ControlPlanePart::Etcd, down)
                .await
                .map_err(anyhow::Error::from),
        };
        let what = match kill.target {
            Target::Controller => "controller",
            Target::Kueue => "Kueue",
            Target::ApiServer => "the API server",
            Target::Etcd => "etcd",
        };
        unleashed.outages.push(Outage {
            target: kill.target,
            from,
            to: origin.elapsed().as_secs_f64(),
        });
        match outcome {
            Ok(took) => println!(
                "  chaos {}/{}: killed {what} at {at:.1}s, down {:.1}s, serving again after {:.1}s",
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
        revive(cluster, origin, &mut unleashed);
    }
    loop {
        tokio::select! {
            _ = finished.notified() => break,
            _ = tokio::time::sleep(Duration::from_secs(2)) => revive(cluster, origin, &mut unleashed),
        }
    }
    unleashed
}

/// Starts again what of the control plane has exited since the last look.
fn revive(cluster: &mut LocalCluster, origin: Instant, unleashed: &mut Unleashed) {
    match cluster.revive_exited() {
        Ok(revived) => {
            for what in revived {
                let at = origin.elapsed().as_secs_f64();
                println!("  chaos: started {what} again at {at:.1}s, as its kubelet would");
                unleashed.revived.push(format!("{what}, at {at:.1}s"));
            }
        }
        Err(e) => unleashed.faults.push(format!(
            "starting an exited part of the control plane again: {e}"
        )),
    }
}

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
