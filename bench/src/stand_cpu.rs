//! CPU time by component of the whole stand (API server, etcd, Kueue, the controller, ...):
//! every process this one started, read from /proc while a run goes on. On a machine the
//! run saturates, throughput follows what each workload costs all of them together, so
//! this says where a slower subject's time goes.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::controller_usage::Periodic;

/// One process as /proc shows it at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    pub pid: u32,
    pub parent: u32,
    /// Its program's file name (argv[0] without its directory).
    pub name: String,
    pub cpu_seconds: f64,
}

/// The file name of argv[0].
pub fn program_name(argv: &[String]) -> Option<String> {
    let name = argv.first()?.rsplit('/').next()?.trim();
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
    let ticks = crate::controller_usage::ticks_per_second();
    crate::controller_usage::pids()
        .into_iter()
        .filter_map(|pid| {
            // Its own time only: a child's is counted as the child's.
            let stat = crate::controller_usage::stat(pid)?;
            let name = program_name(&crate::controller_usage::cmdline(pid)?)?;
            Some(Process {
                pid,
                parent: stat.parent,
                name,
                cpu_seconds: stat.own_ticks as f64 / ticks,
            })
        })
        .collect()
}

/// Samples this process's family every second until [`Sampler::finish`].
pub struct Sampler(Periodic<Meter>);

impl Sampler {
    pub fn start() -> Sampler {
        let me = std::process::id();
        let take = move |meter: &mut Meter| meter.add(&family(me, &read_all()));
        let mut meter = Meter::default();
        take(&mut meter);
        Sampler(Periodic::start(meter, Duration::from_secs(1), take))
    }

    pub fn finish(self) -> BTreeMap<String, f64> {
        self.0.finish().by_component()
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
    #[case(&["/root/.cache/awconf/bin/kueue/v0.19.2/kueue", "--config=x"], Some("kueue"))]
    #[case(&["etcd"], Some("etcd"))]
    #[case(&[], None)]
    fn program_names(#[case] argv: &[&str], #[case] expected: Option<&str>) {
        let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
        assert_eq!(program_name(&argv).as_deref(), expected);
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
