//! A small load and a small chaos run as correctness regressions: every AppWrapper ends (or
//! is deleted as planned), no invariant breaks, nothing is left behind. Never speed: the
//! figures are printed, not asserted. The chaos run kills our controller binary
//! (`cargo build -p appwrapper-controller`, which `cargo test --workspace` does) and Kueue.
//! Ends with `N passed, N failed`.

use std::process::ExitCode;
use std::time::Duration;

use awconf_bench::figures::{self, RunReport};
use awconf_bench::stand::Subject;
use awconf_bench::{Settings, chaos, load};
use conformance_steps::ControllerMode;

/// Fixed, so that a failure here reproduces with the same plan and kills.
const SEED: u64 = 20_260_101;

fn settings(appwrappers: usize) -> Settings {
    Settings {
        appwrappers,
        at_once: 10,
        nodes: None,
        seed: SEED,
        kueue: clusters::kueue::default_source().expect("AWCONF_KUEUE_VERSION"),
        report_dir: std::path::Path::new("target").join("awconf-bench-test"),
        timeout: Duration::from_secs(300),
        trace_writes: false,
        monitor_from_log: true,
    }
}

/// What a correct run shows, whatever its speed.
fn problems(run: &RunReport) -> Vec<String> {
    let mut problems = Vec::new();
    if !run.unfinished.is_empty() {
        problems.push(format!("not ended: {:?}", run.unfinished));
    }
    if !run.unexpected.is_empty() {
        problems.push(format!(
            "ended otherwise than planned: {:?}",
            run.unexpected
        ));
    }
    problems.extend(run.violations.iter().map(|v| format!("violation: {v}")));
    problems.extend(run.leftovers.iter().map(|l| format!("left: {l}")));
    problems.extend(run.undeleted.iter().map(|u| format!("not deleted: {u}")));
    problems
}

/// Kueue answers an AppWrapper's end with its Workload's: the trace must see that, or it
/// sees nothing.
fn untraced(run: &RunReport) -> Option<String> {
    let Some(trace) = &run.writes else {
        return Some("no write trace".into());
    };
    let answered = trace.kinds.iter().any(|kind| {
        kind.label
            .contains("appwrappers/status: phase Running→Succeeded")
            && kind
                .answered_by
                .iter()
                .any(|(answer, _)| answer.starts_with("kueue ") && answer.contains("Finished=True"))
    });
    (!answered).then(|| {
        format!(
            "the write trace shows no Finished=True by Kueue after an AppWrapper succeeded: {:#?}",
            trace.kinds
        )
    })
}

/// Twice, as `--repeat 2` runs it: each run on a cluster of its own, the table of medians;
/// the writes traced.
async fn small_load() -> Result<(), String> {
    let result = load(
        &Settings {
            trace_writes: true,
            monitor_from_log: true,
            ..settings(30)
        },
        &[Subject::Controller(ControllerMode::Embedded)],
        2,
    )
    .await
    .map_err(|e| format!("{e:#}"))?;
    let table = figures::table_of_repeats(&result.by_subject());
    for line in &table {
        println!("{line}");
    }
    let mut problems: Vec<String> = result.runs.iter().flat_map(problems).collect();
    problems.extend(result.runs.iter().filter_map(untraced));
    if result.runs.len() != 2 || !table[0].contains("median of 2") {
        problems.push(format!(
            "{} runs, table header {:?}: expected two, and their medians",
            result.runs.len(),
            table[0]
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

async fn small_chaos() -> Result<(), String> {
    let process = Subject::Controller(ControllerMode::Process { binary: None });
    let faults = awconf_bench::chaos::Faults {
        kills: 5,
        apiserver_restarts: 1,
        etcd_restarts: 1,
        failovers: 2,
        pauses: 0,
    };
    let result = chaos(&settings(30), &process, &faults)
        .await
        .map_err(|e| format!("{e:#}"))?;
    for line in figures::table(std::slice::from_ref(&result.run)) {
        println!("{line}");
    }
    if result.verdict.passed() {
        Ok(())
    } else {
        Err(result.verdict.problems.join("\n"))
    }
}

fn outcome(name: &str, result: Result<(), String>) {
    match result {
        Ok(()) => println!("bench_small: {name}: ok"),
        Err(e) => println!("bench_small: {name}: FAILED (seed {SEED})\n{e}"),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    println!("bench_small: small load (30 AppWrappers, embedded)");
    let load = small_load().await;
    println!(
        "bench_small: small chaos (30 AppWrappers, 5 kills, an API server and an etcd restart, a killed and a paused leader, process)"
    );
    let chaos = small_chaos().await;
    let results = [("small load", load), ("small chaos", chaos)];
    let failed = results.iter().filter(|(_, r)| r.is_err()).count();
    for (name, result) in results {
        outcome(name, result);
    }
    println!("{} passed, {failed} failed", 2 - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
