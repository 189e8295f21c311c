//! When to kill what, drawn from a seed. Pure.

use serde::Serialize;

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Target {
    /// The controller under test (a child process: our binary or the reference).
    Controller,
    /// The Kueue manager.
    Kueue,
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
            Target::Kueue => Target::Controller,
        };
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
}
