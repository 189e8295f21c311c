//! When to kill what, drawn from a seed. Pure.

use serde::Serialize;

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Target {
    /// The controller under test (a child process: our binary or the reference).
    Controller,
    /// The Kueue manager.
    Kueue,
    /// The local cluster's API server.
    ApiServer,
    /// The local cluster's etcd.
    Etcd,
    /// The leading one of two replicas of our controller, SIGKILLed: the standby takes over.
    Leader,
    /// The leading one of two replicas, frozen with SIGSTOP until the standby has taken the
    /// Lease, then woken: it must stop without acting.
    PausedLeader,
    /// The controller frozen with SIGSTOP for `down_ms`, then woken: cut off from the API
    /// server while Kueue works on, it must carry on from what it finds.
    PausedController,
}

impl Target {
    /// A fault of the controller under test itself, which must not make it reset a workload.
    pub fn is_controller(self) -> bool {
        matches!(
            self,
            Target::Controller | Target::Leader | Target::PausedLeader
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Kill {
    /// After the previous restart (or the start of the load).
    pub after_ms: u64,
    pub target: Target,
    /// How long it stays dead before it is started again.
    pub down_ms: u64,
}

/// `kills` kills, each 0.5 to 4 s after the previous restart, each target staying down up to
/// 3 s. With two kills or more both targets are killed at least once.
pub fn draw(seed: u64, kills: usize) -> Vec<Kill> {
    // Not the plan's stream: the same seed draws the same plan for `load` and `chaos`.
    let mut rng = Rng::new(seed ^ 0xc4a0_5c4a_05c4_a05c);
    let mut schedule: Vec<Kill> = (0..kills)
        .map(|_| Kill {
            after_ms: rng.between(500, 4000),
            target: if rng.percent(50) {
                Target::Controller
            } else {
                Target::Kueue
            },
            down_ms: rng.between(0, 3000),
        })
        .collect();
    if kills >= 2 && schedule.iter().all(|k| k.target == schedule[0].target) {
        let last = schedule.len() - 1;
        schedule[last].target = match schedule[0].target {
            Target::Controller => Target::Kueue,
            _ => Target::Controller,
        };
    }
    schedule
}

/// `schedule` with `apiserver` restarts of the API server and `etcd` of etcd put in at seeded
/// places, each 5 to 15 s after the fault before it (every client of the API server re-lists
/// after one; a restart every few seconds would leave the control plane's own controllers no
/// time to catch up) and down up to 3 s.
pub fn with_control_plane(
    mut schedule: Vec<Kill>,
    seed: u64,
    apiserver: usize,
    etcd: usize,
) -> Vec<Kill> {
    // A stream of its own: the kills of a seed stay what they were without these.
    let mut rng = Rng::new(seed ^ 0x5eed_c0de_a915_e7cd);
    let parts = std::iter::repeat_n(Target::ApiServer, apiserver)
        .chain(std::iter::repeat_n(Target::Etcd, etcd));
    for target in parts {
        insert_seeded(&mut schedule, &mut rng, target, (5000, 15000), (0, 3000));
    }
    schedule
}

/// Puts a fault of `target` at a seeded place of `schedule`, its pause before it and its time
/// down drawn from the ranges (inclusive).
fn insert_seeded(
    schedule: &mut Vec<Kill>,
    rng: &mut Rng,
    target: Target,
    after_ms: (u64, u64),
    down_ms: (u64, u64),
) {
    let at = rng.between(0, schedule.len() as u64) as usize;
    let kill = Kill {
        after_ms: rng.between(after_ms.0, after_ms.1),
        target,
        down_ms: rng.between(down_ms.0, down_ms.1),
    };
    schedule.insert(at.min(schedule.len()), kill);
}

/// `schedule` with `failovers` leader failovers put in at seeded places, each 5 to 15 s
/// after the fault before it, half of them (by the seed) a paused leader rather than a killed
/// one; with two or more, both kinds. A failover takes its own time (the lease runs out), so
/// `down_ms` is 0.
pub fn with_failovers(mut schedule: Vec<Kill>, seed: u64, failovers: usize) -> Vec<Kill> {
    // A stream of its own: the other faults of a seed stay what they were without these.
    let mut rng = Rng::new(seed ^ 0x1ead_e4fa_11c0_7e45);
    let mut kinds: Vec<Target> = (0..failovers)
        .map(|_| {
            if rng.percent(50) {
                Target::PausedLeader
            } else {
                Target::Leader
            }
        })
        .collect();
    if failovers >= 2 && kinds.iter().all(|k| *k == kinds[0]) {
        let last = kinds.len() - 1;
        kinds[last] = match kinds[0] {
            Target::Leader => Target::PausedLeader,
            _ => Target::Leader,
        };
    }
    for target in kinds {
        insert_seeded(&mut schedule, &mut rng, target, (5000, 15000), (0, 0));
    }
    schedule
}

/// `schedule` with `pauses` pauses of the controller put in at seeded places, each 2 to 8 s
/// after the fault before it, each 2 to 10 s long.
pub fn with_pauses(mut schedule: Vec<Kill>, seed: u64, pauses: usize) -> Vec<Kill> {
    // A stream of its own: the other faults of a seed stay what they were without these.
    let mut rng = Rng::new(seed ^ 0x9a05_ed0c_0471_011e);
    for _ in 0..pauses {
        insert_seeded(
            &mut schedule,
            &mut rng,
            Target::PausedController,
            (2000, 8000),
            (2000, 10000),
        );
    }
    schedule
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0)]
    #[case(1)]
    #[case(2)]
    #[case(5)]
    #[case(20)]
    fn a_seed_draws_one_schedule_within_bounds(#[case] kills: usize) {
        for seed in 0..50 {
            let schedule = draw(seed, kills);
            assert_eq!(schedule, draw(seed, kills));
            assert_eq!(schedule.len(), kills);
            for k in &schedule {
                assert!((500..=4000).contains(&k.after_ms), "{k:?}");
                assert!(k.down_ms <= 3000, "{k:?}");
            }
            if kills >= 2 {
                for target in [Target::Controller, Target::Kueue] {
                    assert!(schedule.iter().any(|k| k.target == target), "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn control_plane_restarts_join_the_kills_without_changing_them() {
        for seed in 0..50 {
            let kills = draw(seed, 10);
            let all = with_control_plane(kills.clone(), seed, 4, 2);
            assert_eq!(all, with_control_plane(kills.clone(), seed, 4, 2));
            assert_eq!(all.len(), 16);
            let count = |t: Target| all.iter().filter(|k| k.target == t).count();
            assert_eq!((count(Target::ApiServer), count(Target::Etcd)), (4, 2));
            let others: Vec<Kill> = all
                .iter()
                .copied()
                .filter(|k| matches!(k.target, Target::Controller | Target::Kueue))
                .collect();
            assert_eq!(others, kills, "seed {seed}");
            for k in &all {
                let after = match k.target {
                    Target::ApiServer | Target::Etcd => 5000..=15000,
                    _ => 500..=4000,
                };
                assert!(after.contains(&k.after_ms), "{k:?}");
                assert!(k.down_ms <= 3000, "{k:?}");
            }
        }
    }

    #[test]
    fn failovers_join_the_other_faults_without_changing_them() {
        for seed in 0..50 {
            let faults = with_control_plane(draw(seed, 10), seed, 2, 1);
            let all = with_failovers(faults.clone(), seed, 6);
            assert_eq!(all, with_failovers(faults.clone(), seed, 6));
            assert_eq!(all.len(), faults.len() + 6);
            let count = |t: Target| all.iter().filter(|k| k.target == t).count();
            assert_eq!(count(Target::Leader) + count(Target::PausedLeader), 6);
            assert!(
                count(Target::Leader) > 0 && count(Target::PausedLeader) > 0,
                "seed {seed}"
            );
            let others: Vec<Kill> = all
                .iter()
                .copied()
                .filter(|k| !matches!(k.target, Target::Leader | Target::PausedLeader))
                .collect();
            assert_eq!(others, faults);
            for k in all
                .iter()
                .filter(|k| matches!(k.target, Target::Leader | Target::PausedLeader))
            {
                assert!((5000..=15000).contains(&k.after_ms), "{k:?}");
                assert_eq!(k.down_ms, 0);
            }
        }
    }

    #[test]
    fn pauses_join_the_other_faults_without_changing_them() {
        for seed in 0..50 {
            let faults = with_failovers(draw(seed, 10), seed, 2);
            let all = with_pauses(faults.clone(), seed, 5);
            assert_eq!(all, with_pauses(faults.clone(), seed, 5));
            assert_eq!(all.len(), faults.len() + 5);
            let others: Vec<Kill> = all
                .iter()
                .copied()
                .filter(|k| k.target != Target::PausedController)
                .collect();
            assert_eq!(others, faults);
            for k in all.iter().filter(|k| k.target == Target::PausedController) {
                assert!((2000..=8000).contains(&k.after_ms), "{k:?}");
                assert!((2000..=10000).contains(&k.down_ms), "{k:?}");
            }
        }
    }
}
