//! Load and chaos benches of an AppWrapper controller on the embedded cluster with the real
//! Kueue: a seeded plan of AppWrappers ([`plan`]) submitted to a queue that admits a few at a
//! time ([`run`]), on a fresh cluster per run ([`stand`]), measured ([`timeline`], [`usage`],
//! [`audit`]) and judged by the conformance harness's invariant monitor. [`chaos`] kills the
//! controller and Kueue meanwhile.

pub mod audit;
pub mod chaos;
pub mod controller_usage;
pub mod figures;
pub mod manifest;
pub mod percentiles;
pub mod plan;
pub mod rng;
pub mod run;
pub mod stand;
pub mod stand_cpu;
pub mod workload_timeline;
pub mod write_trace;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use clusters::kueue::KueueSource;
use clusters::providers::local::audit::Detail as AuditDetail;
use environment::ControllerMode;
use serde::Serialize;

use crate::figures::RunReport;
use crate::percentiles::Percentiles;
use crate::plan::Plan;
use crate::run::{Run, Workloads};
use crate::stand::{Stand, Subject};

/// What every bench run shares.
#[derive(Clone, Debug)]
pub struct Settings {
    pub appwrappers: usize,
    /// The ClusterQueue admits about this many at once.
    pub at_once: usize,
    /// Fake nodes; `None` for enough to hold `at_once` AppWrappers of eight pods.
    pub nodes: Option<usize>,
    pub seed: u64,
    pub kueue: KueueSource,
    /// Each run's controller log and configuration go to a directory of its own here.
    pub report_dir: PathBuf,
    /// How long a run waits for every workload to end.
    pub timeout: Duration,
    /// The audit log also keeps what each write to an AppWrapper or Workload left, and the
    /// report says which writes Kueue's Workload writes answered (see [`write_trace`]).
    pub trace_writes: bool,
    /// The invariant monitor reads every AppWrapper write from the audit log (by default), or
    /// watches (for a comparison: the log then keeps no objects).
    pub monitor_from_log: bool,
}

impl Settings {
    pub fn nodes(&self) -> usize {
        // A fake node holds 110 pods.
        self.nodes
            .unwrap_or_else(|| (self.at_once * 8).div_ceil(100).max(2))
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub plan: String,
    /// How many times each subject ran the plan.
    pub repeat: usize,
    /// Every run, round after round: each round runs every subject once, in the order given.
    pub runs: Vec<RunReport>,
}

impl LoadReport {
    /// The runs of each subject, in the order the subjects were given.
    pub fn by_subject(&self) -> Vec<Vec<&RunReport>> {
        let mut groups: Vec<Vec<&RunReport>> = Vec::new();
        for run in &self.runs {
            match groups.iter_mut().find(|g| g[0].subject == run.subject) {
                Some(group) => group.push(run),
                None => groups.push(vec![run]),
            }
        }
        groups
    }
}

/// Runs the plan of `settings` on each subject in turn, each on a fresh cluster, `repeat`
/// rounds in all: the subjects alternate, so that a machine growing slower or faster during the
/// rounds weighs on each alike.
pub async fn load(
    settings: &Settings,
    subjects: &[Subject],
    repeat: usize,
) -> anyhow::Result<LoadReport> {
    anyhow::ensure!(repeat > 0, "--repeat must be at least 1");
    let plan = Arc::new(Plan::draw(settings.seed, settings.appwrappers));
    println!("plan: {}", plan.describe());
    let mut runs = Vec::new();
    for round in 1..=repeat {
        if repeat > 1 {
            println!("\n== round {round} of {repeat}");
        }
        for subject in subjects {
            let round = (repeat > 1).then_some(round);
            let (report, _) = run_on_fresh_stand(settings, &plan, subject, None, round).await?;
            runs.push(report);
        }
    }
    Ok(LoadReport {
        plan: plan.describe(),
        repeat,
        runs,
    })
}

/// One subject on a stand of its own; with a kill schedule, a chaos run (what the kills did
/// is returned beside the report).
async fn run_on_fresh_stand(
    settings: &Settings,
    plan: &Arc<Plan>,
    subject: &Subject,
    kills: Option<&[chaos::schedule::Kill]>,
    round: Option<usize>,
) -> anyhow::Result<(RunReport, chaos::Unleashed)> {
    let mut dir_name = subject
        .label()
        .replace([' ', '(', ')'], "-")
        .replace("--", "-")
        .trim_matches('-')
        .to_string();
    if let Some(round) = round {
        dir_name.push_str(&format!("-{round}"));
    }
    let report_dir = settings.report_dir.join(dir_name);
    println!(
        "\n== {}: bringing up a cluster with {} fake nodes, Kueue and the workload's controller",
        subject.label(),
        settings.nodes()
    );
    let audit = if settings.trace_writes {
        AuditDetail::Writes
    } else if settings.monitor_from_log {
        AuditDetail::AppWrapperWrites
    } else {
        AuditDetail::Metadata
    };
    let mut stand = Stand::up(
        subject,
        settings.nodes(),
        &settings.kueue,
        &report_dir,
        audit,
    )
    .await?;
    let result = measure(settings, plan, subject, &mut stand, kills).await;
    keep_cluster_logs(stand.cluster.work_dir(), &report_dir.join("cluster-logs"));
    stand.down().await;
    result
}

/// Copies the logs of the control plane, KWOK and Kueue (not the audit log, which the run has
/// read) from the cluster's directory, which goes with the stand, into `into`: why a part
/// stalled or exited is in them.
fn keep_cluster_logs(work_dir: &std::path::Path, into: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(work_dir.join("logs")) else {
        return;
    };
    if let Err(e) = std::fs::create_dir_all(into) {
        tracing::warn!("keeping the cluster's logs in {}: {e}", into.display());
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == "audit.log" {
            continue;
        }
        if let Err(e) = std::fs::copy(entry.path(), into.join(&name)) {
            tracing::warn!("keeping {}: {e}", entry.path().display());
        }
    }
}

async fn measure(
    settings: &Settings,
    plan: &Arc<Plan>,
    subject: &Subject,
    stand: &mut Stand,
    kills: Option<&[chaos::schedule::Kill]>,
) -> anyhow::Result<(RunReport, chaos::Unleashed)> {
    let workloads = match subject {
        Subject::PlainJobs => Workloads::PlainJobs,
        Subject::Controller(_) => Workloads::AppWrappers,
    };
    let in_process = matches!(subject, Subject::Controller(ControllerMode::Embedded));
    let target = Arc::new(AtomicU32::new(0));
    let measured = match &stand.environment {
        Some(environment) => {
            if let Some(pid) = environment.controller.pid() {
                target.store(pid, Ordering::SeqCst);
            }
            in_process || environment.controller.pid().is_some()
        }
        None => false,
    };
    let sampler =
        measured.then(|| controller_usage::Sampler::start(Arc::clone(&target), in_process));
    let stand_sampler = stand_cpu::Sampler::start();
    let namespace = format!("bench-{}-{}", settings.seed, std::process::id());
    let monitor_source = match stand.cluster.appwrapper_audit_log() {
        Some(log) if settings.monitor_from_log => monitor::Source::AuditLog {
            log,
            etcd: Some(stand.cluster.etcd_url()),
        },
        _ => monitor::Source::Watch,
    };
    let run = Run::begin(
        &stand.kubeconfig,
        Arc::clone(plan),
        workloads,
        namespace,
        settings.at_once,
        monitor_source,
    )
    .await?;
    println!(
        "{}: submitting {} {} to namespace {}",
        subject.label(),
        plan.workloads.len(),
        match workloads {
            Workloads::AppWrappers => "AppWrappers",
            Workloads::PlainJobs => "plain Jobs",
        },
        run.namespace
    );
    // The standby of a run with failovers outlives the load: the cleanup after it needs a
    // leader, whichever replica that is.
    let mut replicas = None;
    let mut unleashed = match kills {
        None => {
            run.drive(settings.timeout).await;
            chaos::Unleashed::default()
        }
        Some(schedule) => {
            let Stand {
                kueue,
                environment,
                cluster,
                ..
            } = stand;
            let environment = environment
                .as_mut()
                .ok_or_else(|| anyhow::anyhow!("a chaos run needs a controller"))?;
            let failovers = schedule.iter().any(|k| {
                matches!(
                    k.target,
                    chaos::schedule::Target::Leader | chaos::schedule::Target::PausedLeader
                )
            });
            if failovers {
                let dir = environment
                    .controller
                    .log_path()
                    .and_then(|log| log.parent())
                    .map(|dir| dir.join("standby"))
                    .ok_or_else(|| anyhow::anyhow!("failovers need a controller process"))?;
                let (standby, leases, lease) = chaos::two_replicas(
                    &mut environment.controller,
                    &environment.client,
                    &environment.watch_client,
                    &dir,
                )
                .await?;
                target.store(environment.controller.pid().unwrap_or(0), Ordering::SeqCst);
                println!(
                    "two replicas of the controller elect their leader on Lease {lease}; the \
                     standby logs to {}",
                    dir.display()
                );
                replicas = Some((standby, leases, lease));
            }
            let targets = chaos::Targets {
                controller: &mut environment.controller,
                controller_client: &environment.watch_client,
                kueue,
                cluster,
                pid: &target,
                origin: run.origin(),
                standby: replicas.as_mut().map(|(standby, leases, lease)| {
                    chaos::Standby::new(standby, leases.clone(), lease.clone())
                }),
            };
            let finished = tokio::sync::Notify::new();
            let drive = async {
                run.drive(settings.timeout).await;
                finished.notify_one();
            };
            let (_, unleashed) = tokio::join!(drive, chaos::unleash(schedule, targets, &finished));
            unleashed
        }
    };
    let started_at = run.started_at;
    let conclusion = run.conclude().await;
    let usage = sampler.map(controller_usage::Sampler::finish);
    let stand_cpu = stand_sampler.finish();
    // The audit log is written in batches.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = std::fs::read_to_string(stand.cluster.audit_log_path()).unwrap_or_default();
    let requests = audit::count(log.lines(), started_at, conclusion.ended_at);
    let writes = settings
        .trace_writes
        .then(|| write_trace::trace(log.lines(), started_at, conclusion.ended_at));
    drop(log);
    let timeline = &conclusion.timeline;
    let tally = timeline.tally();
    let seconds = timeline.span().unwrap_or_default();
    let unexpected = plan
        .workloads
        .iter()
        .filter_map(|w| {
            let seen = timeline.records().get(&w.name)?.end?;
            let planned = workloads.planned_end(w);
            (seen != planned).then(|| format!("{}: planned {planned:?}, {seen:?}", w.name))
        })
        .collect();
    let report = RunReport {
        subject: subject.label(),
        seed: settings.seed,
        workloads: plan.workloads.len(),
        at_once: settings.at_once,
        nodes: settings.nodes(),
        seconds,
        to_running: Percentiles::of(&timeline.to_running()),
        admitted_to_running: Percentiles::of(&timeline.admitted_to_running()),
        to_end: Percentiles::of(&timeline.to_end()),
        throughput: if seconds > 0.0 {
            tally.ended() as f64 / seconds
        } else {
            0.0
        },
        tally,
        unexpected,
        unfinished: timeline.unfinished(),
        controller: usage,
        controller_client: subject.user_agent_product().map(str::to_string),
        stand_cpu,
        requests,
        violations: conclusion.violations,
        unchecked: conclusion.unchecked,
        monitor_source: conclusion.monitor_source,
        pods_left: conclusion.pods_left,
        leftovers: conclusion.leftovers,
        undeleted: conclusion.undeleted,
        create_retries: conclusion.create_retries,
        records: timeline.records().clone(),
        writes,
    };
    if let Some(environment) = &mut stand.environment
        && kills.is_some()
        && !environment.controller.is_running()
    {
        unleashed
            .faults
            .push("the controller was not running at the end".into());
    }
    Ok((report, unleashed))
}

#[derive(Clone, Debug, Serialize)]
pub struct ChaosReport {
    pub plan: String,
    pub kills: Vec<chaos::schedule::Kill>,
    pub outages: Vec<chaos::Outage>,
    /// Parts of the control plane that exited by themselves and were started again.
    pub revived: Vec<String>,
    pub run: RunReport,
    pub verdict: chaos::verdict::Verdict,
}

/// The plan of `settings` on `subject` while the controller and Kueue are killed `kills`
/// times at seeded moments, and the verdict on what it left.
pub async fn chaos(
    settings: &Settings,
    subject: &Subject,
    faults: &chaos::Faults,
) -> anyhow::Result<ChaosReport> {
    anyhow::ensure!(
        matches!(
            subject,
            Subject::Controller(ControllerMode::Process { .. } | ControllerMode::Reference { .. })
        ),
        "a chaos run kills the controller as a process: --controller process or reference"
    );
    let plan = Arc::new(Plan::draw(settings.seed, settings.appwrappers));
    anyhow::ensure!(
        faults.failovers == 0
            || matches!(subject, Subject::Controller(ControllerMode::Process { .. })),
        "failovers run two replicas of our controller's binary: --controller process"
    );
    let schedule = chaos::schedule::with_failovers(
        chaos::schedule::with_control_plane(
            chaos::schedule::draw(settings.seed, faults.kills),
            settings.seed,
            faults.apiserver_restarts,
            faults.etcd_restarts,
        ),
        settings.seed,
        faults.failovers,
    );
    let schedule = chaos::schedule::with_pauses(schedule, settings.seed, faults.pauses);
    println!("plan: {}", plan.describe());
    println!("kills: {}", chaos::describe(&schedule));
    let (run, unleashed) =
        run_on_fresh_stand(settings, &plan, subject, Some(&schedule), None).await?;
    let verdict = chaos::verdict::judge(&chaos::verdict::Outcome {
        plan: &plan,
        records: &run.records,
        violations: &run.violations,
        unchecked: &run.unchecked,
        leftovers: &run.leftovers,
        outages: &unleashed.outages,
        faults: &unleashed.faults,
    });
    Ok(ChaosReport {
        plan: plan.describe(),
        kills: schedule,
        outages: unleashed.outages,
        revived: unleashed.revived,
        run,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_logs_are_kept_but_the_audit_log() {
        let work_dir = tempfile::tempdir().unwrap();
        let logs = work_dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        for name in ["kube-scheduler.log", "kwok.log", "audit.log"] {
            std::fs::write(logs.join(name), name).unwrap();
        }
        let report = tempfile::tempdir().unwrap();
        let into = report.path().join("cluster-logs");
        keep_cluster_logs(work_dir.path(), &into);
        let mut kept: Vec<String> = std::fs::read_dir(&into)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        kept.sort();
        assert_eq!(kept, ["kube-scheduler.log", "kwok.log"]);
        assert_eq!(
            std::fs::read_to_string(into.join("kwok.log")).unwrap(),
            "kwok.log"
        );
    }
}
