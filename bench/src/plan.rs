//! The workload of a bench run, drawn from a seed: which AppWrappers, of what shape, with how
//! many pods, which of them fail. Pure: the same seed and count give the same plan.

use serde::Serialize;

use crate::rng::Rng;

/// What an AppWrapper wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Shape {
    /// A Job whose pods all run at once.
    Job,
    /// Bare Pods, one component each.
    Pods,
    /// A Deployment: it never ends, so the bench deletes the AppWrapper once it has run.
    Deployment,
    /// A Job, bare Pods and a Service in one AppWrapper.
    Mixed,
}

/// Drawn in proportion to these weights.
const SHAPES: [(Shape, u64); 4] = [
    (Shape::Job, 40),
    (Shape::Pods, 20),
    (Shape::Deployment, 15),
    (Shape::Mixed, 25),
];

/// The chance, in percent, that an AppWrapper that can end is planned to fail.
pub const FAILING_PERCENT: u64 = 15;

/// How an AppWrapper is planned to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Ending {
    Succeeded,
    /// Its failing pods make it reset once; failing again, it fails (retryLimit 1).
    Failed,
    /// Deleted by the bench after it has run for a while.
    Deleted,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Planned {
    pub name: String,
    pub shape: Shape,
    /// 1 to 8 (2 to 8 for [`Shape::Mixed`]).
    pub pods: u32,
    pub fails: bool,
    /// How long each pod runs before it succeeds or fails.
    pub run_seconds: u32,
}

impl Planned {
    pub fn ending(&self) -> Ending {
        match (self.shape, self.fails) {
            (Shape::Deployment, _) => Ending::Deleted,
            (_, true) => Ending::Failed,
            (_, false) => Ending::Succeeded,
        }
    }

    /// The resettingCount the plan explains: one reset before a planned failure.
    pub fn resets(&self) -> i64 {
        i64::from(self.fails)
    }

    /// Each AppWrapper asks for about one CPU in all, so a quota of M CPUs admits M at once.
    pub fn cpu_millis_per_pod(&self) -> u32 {
        1000 / self.pods
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub seed: u64,
    pub workloads: Vec<Planned>,
}

impl Plan {
    pub fn draw(seed: u64, count: usize) -> Plan {
        let mut rng = Rng::new(seed);
        let weights: Vec<u64> = SHAPES.iter().map(|(_, w)| *w).collect();
        let workloads = (0..count)
            .map(|i| {
                // Each AppWrapper draws from its own generator, so the first N of a larger
                // plan are the plan of N.
                let mut rng = rng.split();
                let shape = SHAPES[rng.weighted(&weights)].0;
                let fewest = if shape == Shape::Mixed { 2 } else { 1 };
                let pods = rng.between(fewest, 8) as u32;
                let fails = shape != Shape::Deployment && rng.percent(FAILING_PERCENT);
                let run_seconds = rng.between(1, 4) as u32;
                Planned {
                    name: format!("aw-{i:04}"),
                    shape,
                    pods,
                    fails,
                    run_seconds,
                }
            })
            .collect();
        Plan { seed, workloads }
    }

    pub fn ending_count(&self, ending: Ending) -> usize {
        self.workloads
            .iter()
            .filter(|w| w.ending() == ending)
            .count()
    }

    pub fn pod_count(&self) -> u32 {
        self.workloads.iter().map(|w| w.pods).sum()
    }

    pub fn get(&self, name: &str) -> Option<&Planned> {
        self.workloads.iter().find(|w| w.name == name)
    }

    /// One line: how many of each shape and ending.
    pub fn describe(&self) -> String {
        let shapes: Vec<String> = SHAPES
            .iter()
            .map(|(shape, _)| {
                let n = self.workloads.iter().filter(|w| w.shape == *shape).count();
                format!("{n} {shape:?}")
            })
            .collect();
        format!(
            "{} AppWrappers ({}), {} pods; planned: {} succeed, {} fail after one reset, {} deleted while running (seed {})",
            self.workloads.len(),
            shapes.join(", "),
            self.pod_count(),
            self.ending_count(Ending::Succeeded),
            self.ending_count(Ending::Failed),
            self.ending_count(Ending::Deleted),
            self.seed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn a_seed_gives_one_plan_and_a_prefix_of_a_larger_one() {
        assert_eq!(Plan::draw(42, 50), Plan::draw(42, 50));
        assert_ne!(Plan::draw(42, 50), Plan::draw(43, 50));
        let small = Plan::draw(42, 30);
        assert_eq!(small.workloads[..], Plan::draw(42, 50).workloads[..30]);
    }

    #[test]
    fn every_shape_and_ending_appears_in_a_plan_of_two_hundred() {
        let plan = Plan::draw(1, 200);
        for (shape, _) in SHAPES {
            assert!(plan.workloads.iter().any(|w| w.shape == shape), "{shape:?}");
        }
        for ending in [Ending::Succeeded, Ending::Failed, Ending::Deleted] {
            assert!(plan.ending_count(ending) > 0, "{ending:?}");
        }
        let failing = plan.ending_count(Ending::Failed);
        assert!((10..50).contains(&failing), "{failing} failing of 200");
    }

    #[test]
    fn sizes_stay_within_bounds() {
        for w in Plan::draw(9, 500).workloads {
            let fewest = if w.shape == Shape::Mixed { 2 } else { 1 };
            assert!((fewest..=8).contains(&w.pods), "{w:?}");
            assert!((1..=4).contains(&w.run_seconds), "{w:?}");
            assert!(!(w.fails && w.shape == Shape::Deployment), "{w:?}");
            assert!(w.cpu_millis_per_pod() * w.pods <= 1000);
            assert!(w.cpu_millis_per_pod() * w.pods > 850);
        }
    }

    #[rstest]
    #[case(Shape::Job, false, Ending::Succeeded, 0)]
    #[case(Shape::Pods, true, Ending::Failed, 1)]
    #[case(Shape::Mixed, true, Ending::Failed, 1)]
    #[case(Shape::Deployment, false, Ending::Deleted, 0)]
    fn endings_and_resets_follow_the_shape(
        #[case] shape: Shape,
        #[case] fails: bool,
        #[case] ending: Ending,
        #[case] resets: i64,
    ) {
        let w = Planned {
            name: "aw".into(),
            shape,
            pods: 3,
            fails,
            run_seconds: 1,
        };
        assert_eq!(w.ending(), ending);
        assert_eq!(w.resets(), resets);
    }
}
