//! The figures of a run, for JSON and for the terminal: one run alone, or several side by
//! side with each figure's ratio to the first run's.

use serde::Serialize;

use crate::audit::Requests;
use crate::controller_usage::Usage;
use crate::percentiles::Percentiles;
use crate::workload_timeline::Tally;

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// `ours (process)`, `reference v1.2.2`, `plain Jobs`.
    pub subject: String,
    pub seed: u64,
    pub workloads: usize,
    pub at_once: usize,
    pub nodes: usize,
    /// From the first creation to the last end.
    pub seconds: f64,
    /// Creation → first seen running, seconds.
    pub to_running: Option<Percentiles>,
    /// Kueue's admission → first seen running, seconds.
    pub admitted_to_running: Option<Percentiles>,
    /// Creation → succeeded, failed or (deleted as planned) gone, seconds.
    pub to_end: Option<Percentiles>,
    /// Workloads ended per second over [`RunReport::seconds`].
    pub throughput: f64,
    pub tally: Tally,
    /// Workloads that ended otherwise than planned, `name: planned P, seen`.
    pub unexpected: Vec<String>,
    pub unfinished: Vec<String>,
    /// The controller's processes (or this process, embedded); `None` for plain Jobs or
    /// a controller in a cluster.
    pub controller: Option<Usage>,
    /// The client name of the controller's requests in [`RunReport::requests`].
    pub controller_client: Option<String>,
    /// CPU seconds by program of the whole stand (the API server, etcd, Kueue, the
    /// controller, awconf itself with the bench's watches and the monitor, ...), spent from
    /// the start of the run to the end of its cleanup.
    pub stand_cpu: std::collections::BTreeMap<String, f64>,
    /// Received by the API server from the first creation to the end of the cleanup.
    pub requests: Requests,
    pub violations: Vec<String>,
    /// States the monitor could not check: a re-list of its watch skipped them (the API
    /// server was down when they changed), or a write of unknown outcome may have left them;
    /// violations unless a fault explains them.
    #[serde(default)]
    pub unchecked: Vec<String>,
    /// Where the monitor read the AppWrappers' states (the audit log, or a watch).
    #[serde(default)]
    pub monitor_source: Option<String>,
    pub pods_left: usize,
    pub leftovers: Vec<String>,
    /// Workloads still there when the cleanup gave up.
    pub undeleted: Vec<String>,
    /// Create requests that were refused and tried again.
    pub create_retries: u64,
    /// Each workload's times and highest resettingCount.
    pub records: std::collections::BTreeMap<String, crate::workload_timeline::Record>,
    /// With `trace_writes`: which writes Kueue's Workload writes answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<crate::write_trace::WriteTrace>,
}

impl RunReport {
    /// Requests of the controller under test.
    pub fn controller_requests(&self) -> Option<u64> {
        self.controller_client
            .as_deref()
            .map(|c| self.requests.of(c))
    }

    fn stand_cpu_total(&self) -> Option<f64> {
        (!self.stand_cpu.is_empty()).then(|| self.stand_cpu.values().sum())
    }

    /// Requests of the clients whose name starts with `prefix`.
    fn requests_of(&self, prefix: &str) -> u64 {
        self.requests
            .by_client
            .iter()
            .filter(|(c, _)| c.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    }
}

/// A figure: its label and how to read it from a report.
struct Row {
    label: &'static str,
    value: fn(&RunReport) -> Option<f64>,
    decimals: usize,
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

const ROWS: &[Row] = &[
    Row {
        label: "admission→Running p50 (s)",
        value: |r| r.admitted_to_running.map(|p| p.p50),
        decimals: 2,
    },
    Row {
        label: "admission→Running p99 (s)",
        value: |r| r.admitted_to_running.map(|p| p.p99),
        decimals: 2,
    },
    Row {
        label: "admission→Running max (s)",
        value: |r| r.admitted_to_running.map(|p| p.max),
        decimals: 2,
    },
    Row {
        label: "creation→Running p50 (s)",
        value: |r| r.to_running.map(|p| p.p50),
        decimals: 2,
    },
    Row {
        label: "creation→Running p95 (s)",
        value: |r| r.to_running.map(|p| p.p95),
        decimals: 2,
    },
    Row {
        label: "creation→Running p99 (s)",
        value: |r| r.to_running.map(|p| p.p99),
        decimals: 2,
    },
    Row {
        label: "creation→Running max (s)",
        value: |r| r.to_running.map(|p| p.max),
        decimals: 2,
    },
    Row {
        label: "creation→end p50 (s)",
        value: |r| r.to_end.map(|p| p.p50),
        decimals: 2,
    },
    Row {
        label: "creation→end p95 (s)",
        value: |r| r.to_end.map(|p| p.p95),
        decimals: 2,
    },
    Row {
        label: "creation→end p99 (s)",
        value: |r| r.to_end.map(|p| p.p99),
        decimals: 2,
    },
    Row {
        label: "creation→end max (s)",
        value: |r| r.to_end.map(|p| p.max),
        decimals: 2,
    },
    Row {
        label: "throughput (ended/s)",
        value: |r| Some(r.throughput),
        decimals: 2,
    },
    Row {
        label: "first creation→last end (s)",
        value: |r| Some(r.seconds),
        decimals: 1,
    },
    Row {
        label: "succeeded",
        value: |r| Some(r.tally.succeeded as f64),
        decimals: 0,
    },
    Row {
        label: "failed",
        value: |r| Some(r.tally.failed as f64),
        decimals: 0,
    },
    Row {
        label: "deleted",
        value: |r| Some(r.tally.deleted as f64),
        decimals: 0,
    },
    Row {
        label: "not ended",
        value: |r| Some(r.unfinished.len() as f64),
        decimals: 0,
    },
    Row {
        label: "resets (resettingCount summed)",
        value: |r| Some(r.records.values().map(|w| w.max_resets).sum::<i64>() as f64),
        decimals: 0,
    },
    Row {
        label: "ended otherwise than planned",
        value: |r| Some(r.unexpected.len() as f64),
        decimals: 0,
    },
    Row {
        label: "controller peak resident (MiB)",
        value: |r| r.controller.map(|u| mib(u.peak_resident_bytes)),
        decimals: 1,
    },
    Row {
        label: "controller CPU (s)",
        value: |r| r.controller.map(|u| u.cpu_seconds),
        decimals: 2,
    },
    Row {
        label: "CPU, whole stand (s)",
        value: |r| r.stand_cpu_total(),
        decimals: 1,
    },
    Row {
        label: "CPU, whole stand, per ended workload (s)",
        value: |r| {
            let ended = r.tally.ended();
            r.stand_cpu_total()
                .filter(|_| ended > 0)
                .map(|cpu| cpu / ended as f64)
        },
        decimals: 3,
    },
    Row {
        label: "CPU, API server (s)",
        value: |r| r.stand_cpu.get("kube-apiserver").copied(),
        decimals: 1,
    },
    Row {
        label: "API requests, all clients",
        value: |r| Some(r.requests.total as f64),
        decimals: 0,
    },
    Row {
        label: "API requests, controller",
        value: |r| r.controller_requests().map(|n| n as f64),
        decimals: 0,
    },
    Row {
        label: "API requests, kueue",
        value: |r| Some(r.requests_of("kueue") as f64),
        decimals: 0,
    },
    Row {
        label: "API requests, kube-controller-manager",
        value: |r| Some(r.requests_of("kube-controller-manager") as f64),
        decimals: 0,
    },
    Row {
        label: "API requests, kube-scheduler",
        value: |r| Some(r.requests_of("kube-scheduler") as f64),
        decimals: 0,
    },
    Row {
        label: "API requests, kwok",
        value: |r| Some(r.requests_of("kwok") as f64),
        decimals: 0,
    },
    Row {
        label: "API requests, awconf-bench",
        value: |r| Some(r.requests_of(crate::stand::BENCH_USER_AGENT) as f64),
        decimals: 0,
    },
    Row {
        label: "monitor violations",
        value: |r| Some(r.violations.len() as f64),
        decimals: 0,
    },
    Row {
        label: "pods left at the end",
        value: |r| Some(r.pods_left as f64),
        decimals: 0,
    },
    Row {
        label: "objects left at the end",
        value: |r| Some((r.leftovers.len() - r.pods_left) as f64),
        decimals: 0,
    },
];

/// The median of the figures a subject's runs have, and their range.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Spread {
    /// `None` when no run has the figure.
    fn of(values: impl Iterator<Item = Option<f64>>) -> Option<Spread> {
        let mut values: Vec<f64> = values.flatten().collect();
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: values[0],
            max: values[n - 1],
        })
    }

    fn cell(&self, decimals: usize) -> String {
        let median = format!("{:.decimals$}", self.median);
        let (min, max) = (
            format!("{:.decimals$}", self.min),
            format!("{:.decimals$}", self.max),
        );
        if min == max {
            median
        } else {
            format!("{median} ({min}–{max})")
        }
    }
}

/// `other ÷ base`, when both are there and the base is not zero.
pub fn ratio(base: Option<f64>, other: Option<f64>) -> String {
    match (base, other) {
        (Some(b), Some(o)) if b != 0.0 => format!("{:.2}×", o / b),
        (Some(b), Some(o)) if b == 0.0 && o == 0.0 => "=".into(),
        _ => "-".into(),
    }
}

/// The figures of `reports` side by side; after the first, each column is followed by its
/// ratio to the first.
pub fn table(reports: &[RunReport]) -> Vec<String> {
    let groups: Vec<Vec<&RunReport>> = reports.iter().map(|r| vec![r]).collect();
    table_of_repeats(&groups)
}

/// The figures of each subject's runs side by side: one run's figure, or the median of its
/// runs with their range (`0.875 (0.861–0.902)`); after the first, each column is followed by
/// the ratio of its median to the first's.
pub fn table_of_repeats(groups: &[Vec<&RunReport>]) -> Vec<String> {
    let mut header = vec![String::new()];
    for (i, group) in groups.iter().enumerate() {
        let runs = if group.len() > 1 {
            format!(", median of {}", group.len())
        } else {
            String::new()
        };
        header.push(format!("{}{runs}", group[0].subject));
        if i > 0 {
            header.push(format!("÷ {}", groups[0][0].subject));
        }
    }
    let mut rows = vec![header];
    for row in ROWS {
        let figures: Vec<Option<Spread>> = groups
            .iter()
            .map(|group| Spread::of(group.iter().map(|r| (row.value)(r))))
            .collect();
        let base = figures[0].map(|f| f.median);
        let mut line = vec![row.label.to_string()];
        for (i, figure) in figures.iter().enumerate() {
            line.push(figure.map_or_else(|| "-".to_string(), |f| f.cell(row.decimals)));
            if i > 0 {
                line.push(ratio(base, figure.map(|f| f.median)));
            }
        }
        rows.push(line);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, text)| {
                    let pad = widths[c] - text.chars().count();
                    if c == 0 {
                        format!("{text}{}", " ".repeat(pad))
                    } else {
                        format!("{}{text}", " ".repeat(pad))
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect()
}

/// What a single run's table leaves out: notes on the figures, the clients, the problems.
pub fn details(r: &RunReport) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(usage) = r.controller
        && usage.in_process
    {
        lines.push(format!(
            "{}: the controller runs inside awconf, so its memory and CPU are awconf's own (the bench's watches and the monitor included); its requests carry no User-Agent",
            r.subject
        ));
    }
    if !r.stand_cpu.is_empty() {
        let mut spent: Vec<(&String, &f64)> = r.stand_cpu.iter().collect();
        spent.sort_by(|a, b| b.1.total_cmp(a.1));
        let shown: Vec<String> = spent
            .iter()
            .take(10)
            .map(|(name, s)| format!("{name} {s:.1}"))
            .collect();
        lines.push(format!(
            "{}: CPU seconds by program: {}",
            r.subject,
            shown.join(", ")
        ));
    }
    let clients: Vec<String> = r
        .requests
        .by_client
        .iter()
        .take(12)
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    lines.push(format!(
        "{}: API requests by client: {}",
        r.subject,
        clients.join(", ")
    ));
    if let Some(client) = &r.controller_client
        && let Some(resources) = r.requests.resources.get(client)
    {
        let mut counted: Vec<(&String, &u64)> = resources.iter().collect();
        counted.sort_by(|a, b| b.1.cmp(a.1));
        let shown: Vec<String> = counted
            .iter()
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        lines.push(format!(
            "{}: the controller's requests: {}",
            r.subject,
            shown.join(", ")
        ));
    }
    if let Some(source) = &r.monitor_source {
        lines.push(format!(
            "{}: the invariant monitor read {source}; {} changes went unchecked",
            r.subject,
            r.unchecked.len()
        ));
    }
    for (what, list) in [
        ("not ended", &r.unfinished),
        ("ended otherwise than planned", &r.unexpected),
        ("invariant violations", &r.violations),
        ("unchecked: the monitor could not see them", &r.unchecked),
        ("left at the end", &r.leftovers),
        ("not gone after the cleanup", &r.undeleted),
    ] {
        if !list.is_empty() {
            let shown: Vec<&str> = list.iter().take(20).map(String::as_str).collect();
            let more = list.len().saturating_sub(shown.len());
            let more = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            lines.push(format!("{}: {what}: {}{more}", r.subject, shown.join("; ")));
        }
    }
    if let Some(writes) = &r.writes {
        lines.extend(write_trace(&r.subject, writes));
    }
    lines
}

/// Each kind of write, most first, with the Workload writes by Kueue that came next.
pub fn write_trace(subject: &str, trace: &crate::write_trace::WriteTrace) -> Vec<String> {
    let mut lines = vec![format!(
        "{subject}: writes to AppWrappers and their Workloads, by what they changed (→ the Workload writes by Kueue that came next):"
    )];
    for kind in &trace.kinds {
        lines.push(format!("  {:>6}  {}", kind.count, kind.label));
        for (answer, n) in &kind.answered_by {
            lines.push(format!("          → {n:>6}  {answer}"));
        }
    }
    for (history, appwrappers) in &trace.histories {
        lines.push(format!(
            "{subject}: the writes of {appwrappers} AppWrappers, in order:"
        ));
        lines.extend(history.iter().map(|write| format!("          {write}")));
    }
    if trace.unattributed > 0 {
        lines.push(format!(
            "  {} Workload writes by Kueue came before any write to their AppWrapper in the window",
            trace.unattributed
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(Some(2.0), Some(3.0), "1.50×")]
    #[case(Some(0.0), Some(0.0), "=")]
    #[case(Some(0.0), Some(1.0), "-")]
    #[case(None, Some(1.0), "-")]
    #[case(Some(1.0), None, "-")]
    fn ratios(#[case] base: Option<f64>, #[case] other: Option<f64>, #[case] text: &str) {
        assert_eq!(ratio(base, other), text);
    }

    fn report(subject: &str, p50: f64, requests: u64) -> RunReport {
        RunReport {
            subject: subject.into(),
            seed: 1,
            workloads: 2,
            at_once: 1,
            nodes: 2,
            seconds: 10.0,
            to_running: Percentiles::of(&[p50]),
            admitted_to_running: Percentiles::of(&[p50 / 10.0]),
            to_end: Percentiles::of(&[p50 * 2.0]),
            throughput: 0.2,
            tally: Tally::default(),
            unexpected: vec![],
            unfinished: vec![],
            controller: None,
            controller_client: Some("c".into()),
            stand_cpu: [
                ("kube-apiserver".to_string(), 30.0),
                ("etcd".to_string(), 10.0),
            ]
            .into(),
            requests: Requests {
                total: requests,
                by_client: vec![("c".into(), requests)],
                ..Requests::default()
            },
            violations: vec![],
            unchecked: vec![],
            monitor_source: None,
            pods_left: 0,
            leftovers: vec![],
            undeleted: vec![],
            create_retries: 0,
            records: Default::default(),
            writes: None,
        }
    }

    #[test]
    fn side_by_side_with_ratios_to_the_first() {
        let lines = table(&[report("ours", 1.0, 100), report("theirs", 3.0, 250)]);
        assert!(lines[0].ends_with("ours  theirs  ÷ ours"), "{}", lines[0]);
        let p50 = lines
            .iter()
            .find(|l| l.starts_with("creation→Running p50"))
            .unwrap();
        assert!(p50.ends_with("1.00    3.00   3.00×"), "{p50}");
        let controller = lines
            .iter()
            .find(|l| l.starts_with("API requests, controller"))
            .unwrap();
        assert!(controller.ends_with("100     250   2.50×"), "{controller}");
        let memory = lines
            .iter()
            .find(|l| l.starts_with("controller peak"))
            .unwrap();
        assert!(memory.ends_with("-       -       -"), "{memory}");
    }

    #[test]
    fn the_stand_cpu_is_summed_per_ended_workload_and_shown_by_program() {
        let mut r = report("ours", 1.0, 100);
        r.tally.succeeded = 3;
        r.tally.failed = 1;
        let lines = table(std::slice::from_ref(&r));
        let row = |label: &str| {
            lines
                .iter()
                .find(|l| l.starts_with(label))
                .unwrap()
                .split_whitespace()
                .last()
                .unwrap()
                .to_string()
        };
        assert_eq!(row("CPU, whole stand (s)"), "40.0");
        assert_eq!(row("CPU, whole stand, per ended workload (s)"), "10.000");
        assert_eq!(row("CPU, API server (s)"), "30.0");
        assert!(
            details(&r).contains(
                &"ours: CPU seconds by program: kube-apiserver 30.0, etcd 10.0".to_string()
            ),
            "{:?}",
            details(&r)
        );
        r.stand_cpu.clear();
        let lines = table(&[r]);
        let stand = lines
            .iter()
            .find(|l| l.starts_with("CPU, whole stand (s)"))
            .unwrap();
        assert!(
            stand.ends_with('-'),
            "no reading shows as none, not as zero: {stand}"
        );
    }

    #[test]
    fn one_run_alone_has_no_ratio_column() {
        let lines = table(&[report("ours", 1.0, 100)]);
        assert!(lines.iter().all(|l| !l.contains('×')));
        assert_eq!(lines.len(), ROWS.len() + 1);
    }

    #[test]
    fn a_spread_is_the_median_and_range_of_the_figures_there_are() {
        let spread = |values: &[Option<f64>]| Spread::of(values.iter().copied());
        assert_eq!(spread(&[None, None]), None);
        assert_eq!(
            spread(&[Some(3.0), None, Some(1.0), Some(2.0)]),
            Some(Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0
            })
        );
        assert_eq!(spread(&[Some(4.0), Some(1.0)]).unwrap().median, 2.5);
        let one = spread(&[Some(0.8754)]).unwrap();
        assert_eq!(one.cell(3), "0.875");
        let three = spread(&[Some(0.875), Some(0.861), Some(0.902)]).unwrap();
        assert_eq!(three.cell(3), "0.875 (0.861–0.902)");
    }

    #[test]
    fn repeated_runs_show_medians_and_the_ratio_of_medians() {
        let ours = [
            report("ours", 1.0, 100),
            report("ours", 3.0, 300),
            report("ours", 2.0, 200),
        ];
        let jobs = [
            report("jobs", 2.0, 150),
            report("jobs", 2.0, 150),
            report("jobs", 2.0, 150),
        ];
        let groups = vec![ours.iter().collect(), jobs.iter().collect()];
        let lines = table_of_repeats(&groups);
        assert!(lines[0].contains("ours, median of 3"), "{}", lines[0]);
        assert!(lines[0].contains("÷ ours"), "{}", lines[0]);
        let all = lines
            .iter()
            .find(|l| l.starts_with("API requests, all clients"))
            .unwrap();
        assert!(all.contains("200 (100–300)"), "{all}");
        assert!(all.trim_end().ends_with("0.75×"), "{all}");
    }
}
