//! The controller's resident memory and CPU time, read from /proc while a run goes on: a child
//! controller's whole process group (restarted ones included), or this process for the
//! embedded controller, which runs inside it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

/// One process as /proc shows it at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub pid: u32,
    /// User and system time, its waited-for children's included.
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    /// The most it has been resident (VmHWM).
    pub peak_bytes: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Usage {
    pub peak_resident_bytes: u64,
    /// Spent during the run (what a process had spent before it is not counted).
    pub cpu_seconds: f64,
    /// Processes seen (more than one after restarts).
    pub processes: usize,
    /// The embedded controller: these are the whole awconf process's figures, the bench's
    /// own watches and the invariant monitor included.
    pub in_process: bool,
}

/// Accumulates readings: CPU per process since it was first seen at the start (or since it
/// started, for later processes), and the peak over all.
#[derive(Debug, Default)]
pub struct Meter {
    baseline: BTreeMap<u32, f64>,
    last: BTreeMap<u32, f64>,
    peak: u64,
}

impl Meter {
    /// Starts from what the processes had already spent.
    pub fn starting_from(readings: &[Reading]) -> Meter {
        let mut meter = Meter {
            baseline: readings.iter().map(|r| (r.pid, r.cpu_seconds)).collect(),
            ..Meter::default()
        };
        meter.add(readings);
        meter
    }

    pub fn add(&mut self, readings: &[Reading]) {
        let together: u64 = readings.iter().map(|r| r.resident_bytes).sum();
        self.peak = readings
            .iter()
            .map(|r| r.peak_bytes)
            .fold(self.peak.max(together), u64::max);
        for r in readings {
            self.last.insert(r.pid, r.cpu_seconds);
        }
    }

    pub fn usage(&self, in_process: bool) -> Usage {
        let cpu = self
            .last
            .iter()
            .map(|(pid, cpu)| cpu - self.baseline.get(pid).copied().unwrap_or(0.0))
            .sum::<f64>();
        Usage {
            peak_resident_bytes: self.peak,
            cpu_seconds: cpu.max(0.0),
            processes: self.last.len(),
            in_process,
        }
    }
}

/// What /proc/PID/stat says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub parent: u32,
    pub group: u32,
    /// User and system time of the process itself.
    pub own_ticks: u64,
    /// Those of its children it has waited for.
    pub children_ticks: u64,
}

impl Stat {
    fn of(stat: &procfs::process::Stat) -> Option<Stat> {
        Some(Stat {
            parent: u32::try_from(stat.ppid).ok()?,
            group: u32::try_from(stat.pgrp).ok()?,
            own_ticks: stat.utime + stat.stime,
            children_ticks: u64::try_from(stat.cutime + stat.cstime).ok()?,
        })
    }
}

fn process(pid: u32) -> Option<procfs::process::Process> {
    procfs::process::Process::new(i32::try_from(pid).ok()?).ok()
}

/// `pid`'s /proc/PID/stat.
pub fn stat(pid: u32) -> Option<Stat> {
    Stat::of(&process(pid)?.stat().ok()?)
}

/// `(VmRSS, VmHWM)` of `pid` in bytes.
pub fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = process(pid)?.status().ok()?;
    Some((status.vmrss? * 1024, status.vmhwm? * 1024))
}

/// `pid`'s command line, as /proc/PID/cmdline gives it.
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    process(pid)?.cmdline().ok()
}

pub(crate) fn ticks_per_second() -> f64 {
    procfs::ticks_per_second() as f64
}

fn read(pid: u32, ticks: f64) -> Option<(u32, Reading)> {
    let stat = stat(pid)?;
    let (group, cpu) = (stat.group, stat.own_ticks + stat.children_ticks);
    let (resident, peak) = memory(pid)?;
    Some((
        group,
        Reading {
            pid,
            cpu_seconds: cpu as f64 / ticks,
            resident_bytes: resident,
            peak_bytes: peak,
        },
    ))
}

/// The processes /proc lists now.
pub(crate) fn pids() -> Vec<u32> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter_map(|p| u32::try_from(p.pid()).ok())
        .collect()
}

/// Every process of the process group `group`.
pub fn read_group(group: u32) -> Vec<Reading> {
    let ticks = ticks_per_second();
    pids()
        .into_iter()
        .filter_map(|pid| read(pid, ticks))
        .filter(|(g, _)| *g == group)
        .map(|(_, r)| r)
        .collect()
}

pub fn read_self() -> Vec<Reading> {
    read(std::process::id(), ticks_per_second())
        .map(|(_, r)| vec![r])
        .unwrap_or_default()
}

/// A meter fed by `take` every `period` in the background until [`Periodic::finish`].
pub struct Periodic<M> {
    meter: Arc<Mutex<M>>,
    task: tokio::task::JoinHandle<()>,
}

impl<M: Default + Send + 'static> Periodic<M> {
    pub fn start(meter: M, period: Duration, take: impl Fn(&mut M) + Send + 'static) -> Self {
        let meter = Arc::new(Mutex::new(meter));
        let task = tokio::spawn({
            let meter = Arc::clone(&meter);
            async move {
                loop {
                    tokio::time::sleep(period).await;
                    if let Ok(mut m) = meter.lock() {
                        take(&mut m);
                    }
                }
            }
        });
        Periodic { meter, task }
    }

    pub fn finish(self) -> M {
        self.task.abort();
        self.meter
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    }
}

/// Samples the controller in the background until [`Sampler::finish`].
pub struct Sampler {
    periodic: Periodic<Meter>,
    in_process: bool,
}

/// What to sample: the process group of this pid (a child controller; 0 while none runs),
/// updated across restarts.
pub type Target = Arc<AtomicU32>;

impl Sampler {
    /// Samples `target`'s group, or this process when `in_process`.
    pub fn start(target: Target, in_process: bool) -> Sampler {
        let take = move || match target.load(Ordering::SeqCst) {
            _ if in_process => read_self(),
            0 => Vec::new(),
            pid => read_group(pid),
        };
        let meter = Meter::starting_from(&take());
        let periodic = Periodic::start(meter, Duration::from_millis(200), move |m: &mut Meter| {
            m.add(&take())
        });
        Sampler {
            periodic,
            in_process,
        }
    }

    pub fn finish(self) -> Usage {
        self.periodic.finish().usage(self.in_process)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn stat(parent: u32, group: u32, own_ticks: u64, children_ticks: u64) -> Stat {
        Stat {
            parent,
            group,
            own_ticks,
            children_ticks,
        }
    }

    /// A /proc/PID/stat line with the given fields 4 (ppid), 5 (pgrp) and 14 to 17 (utime,
    /// stime, cutime, cstime), the rest as this machine writes them.
    fn line(command: &str, ppid: u32, pgrp: u32, times: [u64; 4]) -> String {
        let [utime, stime, cutime, cstime] = times;
        format!(
            "42 ({command}) S {ppid} {pgrp} {pgrp} 0 -1 4194560 100 0 0 0 {utime} {stime} \
             {cutime} {cstime} 20 0 12 0 1570305 3133440 406 18446744073709551615 1 1 1 0 0 0 0 \
             0 0 0 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0"
        )
    }

    #[rstest]
    #[case(line("appwrapper-op", 1, 42, [250, 50, 7, 3]), Some(stat(1, 42, 300, 10)))]
    #[case(line("a (weird) name", 1, 5, [1, 2, 3, 4]), Some(stat(1, 5, 3, 7)))]
    #[case("7 (short) R 1".to_string(), None)]
    #[case("garbage".to_string(), None)]
    fn stat_lines(#[case] text: String, #[case] expected: Option<Stat>) {
        use procfs::FromRead;
        let parsed = procfs::process::Stat::from_read(text.as_bytes()).ok();
        assert_eq!(parsed.as_ref().and_then(Stat::of), expected);
    }

    #[test]
    fn this_process_has_a_stat_a_resident_size_and_a_peak() {
        let me = std::process::id();
        assert!(super::stat(me).is_some_and(|s| s.group > 0));
        let (resident, peak) = memory(me).expect("VmRSS and VmHWM");
        assert!(resident > 0 && resident <= peak, "{resident} {peak}");
        assert!(cmdline(me).is_some_and(|argv| !argv.is_empty()));
    }

    fn reading(pid: u32, cpu: f64, resident: u64, peak: u64) -> Reading {
        Reading {
            pid,
            cpu_seconds: cpu,
            resident_bytes: resident,
            peak_bytes: peak,
        }
    }

    #[test]
    fn cpu_counts_from_the_start_and_across_restarts() {
        let mut meter = Meter::starting_from(&[reading(1, 5.0, 100, 150)]);
        meter.add(&[reading(1, 7.5, 120, 150)]);
        // Killed and restarted: a new pid spends from zero.
        meter.add(&[reading(2, 1.0, 90, 200)]);
        meter.add(&[reading(2, 2.0, 90, 200)]);
        let usage = meter.usage(false);
        assert_eq!(usage.cpu_seconds, 2.5 + 2.0);
        assert_eq!(usage.peak_resident_bytes, 200);
        assert_eq!(usage.processes, 2);
    }

    #[test]
    fn a_group_peaks_at_its_processes_together() {
        let mut meter = Meter::default();
        meter.add(&[reading(1, 0.0, 100, 110), reading(2, 0.0, 60, 70)]);
        assert_eq!(meter.usage(true).peak_resident_bytes, 160);
        assert!(meter.usage(true).in_process);
    }

    #[tokio::test]
    async fn a_periodic_meter_is_fed_until_it_is_finished() {
        let periodic = Periodic::start(0u32, Duration::from_millis(10), |n: &mut u32| *n += 1);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let fed = periodic.finish();
        assert!(fed >= 2, "fed {fed} times in 100 ms");
    }

    #[test]
    fn this_process_can_be_read() {
        let me = read_self();
        assert_eq!(me.len(), 1);
        assert!(me[0].resident_bytes > 0 && me[0].peak_bytes >= me[0].resident_bytes);
    }
}
