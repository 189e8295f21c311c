//! Latency percentiles by the nearest-rank method: each figure is one of the measured values.

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    /// `None` without values.
    pub fn of(values: &[f64]) -> Option<Percentiles> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Percentiles {
            count: sorted.len(),
            p50: nearest_rank(&sorted, 50),
            p95: nearest_rank(&sorted, 95),
            p99: nearest_rank(&sorted, 99),
            max: sorted[sorted.len() - 1],
        })
    }
}

/// The smallest value with at least `percent` % of the values at or below it.
fn nearest_rank(sorted: &[f64], percent: usize) -> f64 {
    let rank = (percent * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(&[5.0], 5.0, 5.0, 5.0, 5.0)]
    #[case(&[3.0, 1.0], 1.0, 3.0, 3.0, 3.0)]
    #[case(&[15.0, 20.0, 35.0, 40.0, 50.0], 35.0, 50.0, 50.0, 50.0)]
    #[case(&(1..=100).map(f64::from).collect::<Vec<_>>(), 50.0, 95.0, 99.0, 100.0)]
    #[case(&(1..=200).map(f64::from).collect::<Vec<_>>(), 100.0, 190.0, 198.0, 200.0)]
    #[case(&(1..=10).rev().map(f64::from).collect::<Vec<_>>(), 5.0, 10.0, 10.0, 10.0)]
    fn nearest_rank_percentiles(
        #[case] values: &[f64],
        #[case] p50: f64,
        #[case] p95: f64,
        #[case] p99: f64,
        #[case] max: f64,
    ) {
        let p = Percentiles::of(values).unwrap();
        assert_eq!((p.p50, p.p95, p.p99, p.max), (p50, p95, p99, max));
        assert_eq!(p.count, values.len());
    }

    #[test]
    fn no_values_no_percentiles() {
        assert_eq!(Percentiles::of(&[]), None);
    }
}
