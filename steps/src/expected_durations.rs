//! How long each scenario took in a quiet run on a 2-core machine, by mode: the order a
//! run starts its scenarios in (longest first) when its report directory holds no run of its
//! own, as on a fresh clone or in CI. Each file is made from such a run's `results.json` with
//!
//! ```text
//! jq -r '.scenarios[] | select(.seconds > 0) | "\(.seconds | round)\t\(.feature): \(.scenario)"'
//! ```

use std::collections::HashMap;

use crate::options::ControllerMode;

const OURS: &str = include_str!("expected_durations/ours.tsv");
const REFERENCE: &str = include_str!("expected_durations/reference.tsv");
const IN_CLUSTER: &str = include_str!("expected_durations/in-cluster.tsv");

/// Seconds by `feature: scenario`, for the controller `mode` runs: the reference operator's;
/// ours in the cluster, where a scenario's controller of its own is a pod on the real node
/// (its restart scenarios take longer than on this machine); or ours on this machine for
/// every other mode (an external controller is most likely ours or as fast).
pub fn shipped(mode: &ControllerMode) -> HashMap<String, f64> {
    match mode {
        ControllerMode::Reference { .. } => parse(REFERENCE),
        ControllerMode::InCluster { .. } => parse(IN_CLUSTER),
        _ => parse(OURS),
    }
}

/// `seconds<TAB>feature: scenario` lines; a line that is not one is left out (the tests hold
/// the shipped files to the format).
fn parse(text: &str) -> HashMap<String, f64> {
    text.lines().filter_map(entry).collect()
}

fn entry(line: &str) -> Option<(String, f64)> {
    let (seconds, name) = line.split_once('\t')?;
    Some((name.to_string(), seconds.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::{FeatureSet, load_checked, scenarios_of};

    fn scenario_names() -> std::collections::HashSet<String> {
        let features = load_checked(&FeatureSet::BuiltIn, &crate::steps::registry::registered())
            .unwrap_or_else(|e| panic!("{e}"));
        features
            .iter()
            .flat_map(|f| scenarios_of(f).map(move |(_, s)| format!("{}: {}", f.name, s.name)))
            .collect()
    }

    #[rstest::rstest]
    #[case::ours("ours.tsv", OURS)]
    #[case::reference("reference.tsv", REFERENCE)]
    #[case::in_cluster("in-cluster.tsv", IN_CLUSTER)]
    fn every_line_of_a_shipped_file_is_a_duration_of_a_built_in_scenario(
        #[case] file: &str,
        #[case] text: &str,
    ) {
        let names = scenario_names();
        assert!(text.lines().count() > 50, "{file} is nearly empty");
        for (n, line) in text.lines().enumerate() {
            let (name, seconds) =
                entry(line).unwrap_or_else(|| panic!("{file}:{}: not `seconds<TAB>name`", n + 1));
            assert!(seconds > 0.0, "{file}:{}: {seconds} s", n + 1);
            assert!(
                names.contains(&name),
                "{file}:{}: no built-in scenario is called {name:?}; make the file again from a \
                 run (the command is in this module's comment)",
                n + 1
            );
        }
    }

    #[test]
    fn the_reference_and_the_in_cluster_mode_get_their_own_durations_and_the_others_ours() {
        let reference = shipped(&ControllerMode::Reference {
            version: "v1.2.2".into(),
        });
        assert_eq!(reference, parse(REFERENCE));
        assert_eq!(
            shipped(&ControllerMode::InCluster { image: None }),
            parse(IN_CLUSTER)
        );
        assert_eq!(shipped(&ControllerMode::Embedded), parse(OURS));
    }

    #[test]
    fn a_line_without_a_tab_or_a_number_is_not_an_entry() {
        assert_eq!(entry("12\tF: s"), Some(("F: s".into(), 12.0)));
        assert_eq!(entry("F: s"), None);
        assert_eq!(entry("soon\tF: s"), None);
    }
}
