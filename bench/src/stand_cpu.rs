//! CPU time by component of the whole stand (API server, etcd, Kueue, the controller, ...):
//! every process this one started, read from /proc while a run goes on. On a machine the
//! run saturates, throughput follows what each workload costs all of them together, so
//! this says where a slower subject's time goes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One process as /proc shows it at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    pub pid: u32,
    pub parent: u32,
    /// Its program's file name (argv[0] without its directory).
    pub name: String,
    pub cpu_seconds: f64,
}

/// `(parent, CPU ticks)` from the text of /proc/PID/stat.
pub fn parse_stat(text: &str) -> Option<(u32, u64)> {
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let number = |i: usize| fields.get(i)?.parse::<u64>().ok();
    let parent = u32::try_from(number(1)?).ok()?;
    Some((parent, number(11)? + number(12)?))
}

/// The file name of argv[0] in the NUL-separated text of /proc/PID/cmdline.
pub fn program_name(cmdline: &[u8]) -> Option<String> {
    let first = cmdline.split(|b| *b == 0).next()?;
    let path = String::from_utf8_lossy(first);
    let name = path.rsplit('/').next()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// `root` and every process below it.
pub fn family(root: u32, all: &[Process]) -> Vec<&Process> {
    let mut members = vec![root];
    let mut found: Vec<&Process> = Vec::new();
    while let Some(parent) = members.pop() {
        for p in all.iter().filter(|p| p.parent == parent || p.pid == parent) {
            if !found.iter().any(|f| f.pid == p.pid) {
                found.push(p);
                if p.pid != parent {
                    members.push(p.pid);
                }
            }
        }
    }
    found
}

/// CPU per process since it was first seen (its earlier time not counted for the processes
/// of the first reading), summed by program name.
#[derive(Debug, Default)]
pub struct Meter {
    baseline: BTreeMap<u32, f64>,
    last: BTreeMap<u32, (String, f64)>,
    started: bool,
}

impl Meter {
    pub fn add(&mut self, readings: &[&Process]) {
        for p in readings {
            if !self.started {
                self.baseline.insert(p.pid, p.cpu_seconds);
            }
            self.last.insert(p.pid, (p.name.clone(), p.cpu_seconds));
        }
        self.started = true;
    }

    pub fn by_component(&self) -> BTreeMap<String, f64> {
        let mut sums = BTreeMap::new();
        for (pid, (name, cpu)) in &self.last {
            let spent = cpu - self.baseline.get(pid).copied().unwrap_or(0.0);
            *sums.entry(name.clone()).or_insert(0.0) += spent.max(0.0);
        }
        sums
    }
}

fn read_all() -> Vec<Process> {
    let ticks = crate::usage::ticks_per_second();
    crate::usage::pids()
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (parent, cpu) = parse_stat(&stat)?;
            let name = program_name(&std::fs::read(format!("/proc/{pid}/cmdline")).ok()?)?;
            Some(Process {
                pid,
                parent,
                name,
                cpu_seconds: cpu as f64 / ticks,
            })
        })
        .collect()
}

/// Samples this process's family every second until [`Sampler::finish`].
pub struct Sampler {
    meter: Arc<Mutex<Meter>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    pub fn start() -> Sampler {
        let me = std::process::id();
        let take = move |meter: &Mutex<Meter>| {
            let all = read_all();
            if let Ok(mut m) = meter.lock() {
                m.add(&family(me, &all));
            }
        };
        let meter = Arc::new(Mutex::new(Meter::default()));
        take(&meter);
        let task = tokio::spawn({
            let meter = Arc::clone(&meter);
            async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    take(&meter);
                }
            }
        });
        Sampler { meter, task }
    }

    pub fn finish(self) -> BTreeMap<String, f64> {
        self.task.abort();
        self.meter
            .lock()
            .map(|m| m.by_component())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, parent: u32, name: &str, cpu: f64) -> Process {
        Process {
            pid,
            parent,
            name: name.into(),
            cpu_seconds: cpu,
        }
    }

    #[rstest::rstest]
    #[case("42 (kube-apiserver) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 7 3 20", Some((7, 300)))]
    #[case("9 (a (weird) name) R 3 5 5 0 -1 0 0 0 0 0 1 2 3 4 20", Some((3, 3)))]
    #[case("7 (short) R 1", None)]
    fn stat_lines(#[case] text: &str, #[case] expected: Option<(u32, u64)>) {
        assert_eq!(parse_stat(text), expected);
    }

    #[rstest::rstest]
    #[case(
        b"/root/.cache/awconf/bin/kueue/v0.19.2/kueue\0--config=x\0",
        Some("kueue")
    )]
    #[case(b"etcd\0", Some("etcd"))]
    #[case(b"", None)]
    fn program_names(#[case] cmdline: &[u8], #[case] expected: Option<&str>) {
        assert_eq!(program_name(cmdline).as_deref(), expected);
    }

    #[test]
    fn the_family_is_the_root_and_everything_below_it() {
        let all = [
            process(1, 0, "init", 0.0),
            process(10, 1, "awconf", 0.0),
            process(11, 10, "kube-apiserver", 0.0),
            process(12, 11, "helper", 0.0),
            process(20, 1, "sshd", 0.0),
        ];
        let mut pids: Vec<u32> = family(10, &all).iter().map(|p| p.pid).collect();
        pids.sort();
        assert_eq!(pids, vec![10, 11, 12]);
    }

    #[test]
    fn this_process_is_in_its_own_family() {
        let all = read_all();
        let me = std::process::id();
        let family = family(me, &all);
        let found = family.iter().find(|p| p.pid == me).expect("this process");
        assert!(!found.name.is_empty());
    }

    #[test]
    fn cpu_counts_from_the_first_reading_and_sums_by_program() {
        let mut meter = Meter::default();
        meter.add(&[&process(11, 10, "kube-apiserver", 40.0)]);
        meter.add(&[
            &process(11, 10, "kube-apiserver", 55.0),
            // Started during the run: all of its time counts.
            &process(30, 10, "appwrapper-controller", 2.0),
        ]);
        // Restarted under a new pid.
        meter.add(&[&process(31, 10, "appwrapper-controller", 1.5)]);
        let by = meter.by_component();
        assert_eq!(by["kube-apiserver"], 15.0);
        assert_eq!(by["appwrapper-controller"], 3.5);
    }
}
