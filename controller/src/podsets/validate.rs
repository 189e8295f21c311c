//! Declared vs inferred PodSets (§5.5). Order and annotations are not compared.

use std::collections::BTreeMap;

use super::replicas::replicas;
use crate::api::AppWrapperPodSet;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodSetMismatch {
    #[error("multiple DeclaredPodSets with path '{0}'")]
    DuplicatePath(String),
    #[error("DeclaredPodSet count {declared} differs from inferred count {inferred}")]
    Count { declared: usize, inferred: usize },
    #[error("PodSet with path '{0}' is missing")]
    Missing(String),
    #[error(
        "replica count {declared} differs from inferred count {inferred} for PodSet at path position '{path}'"
    )]
    Replicas {
        path: String,
        declared: i32,
        inferred: i32,
    },
}

pub fn validate_pod_sets(
    declared: &[AppWrapperPodSet],
    inferred: &[AppWrapperPodSet],
) -> Result<(), PodSetMismatch> {
    let mut by_path = BTreeMap::new();
    for pod_set in declared {
        if by_path.insert(pod_set.path.as_str(), pod_set).is_some() {
            return Err(PodSetMismatch::DuplicatePath(pod_set.path.clone()));
        }
    }
    if declared.is_empty() || inferred.is_empty() {
        return Ok(());
    }
    if declared.len() != inferred.len() {
        return Err(PodSetMismatch::Count {
            declared: declared.len(),
            inferred: inferred.len(),
        });
    }
    for expected in inferred {
        let found = by_path
            .get(expected.path.as_str())
            .ok_or_else(|| PodSetMismatch::Missing(expected.path.clone()))?;
        if replicas(found) != replicas(expected) {
            return Err(PodSetMismatch::Replicas {
                path: expected.path.clone(),
                declared: replicas(found),
                inferred: replicas(expected),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn ps(path: &str, replicas: Option<i32>) -> AppWrapperPodSet {
        AppWrapperPodSet {
            path: path.to_string(),
            replicas,
            ..Default::default()
        }
    }

    #[rstest]
    #[case::nothing_declared(vec![], vec![ps("template.spec.template", Some(2))])]
    #[case::unknown_gvk_accepts_anything(vec![ps("template.a", None), ps("template.b", Some(7))], vec![])]
    #[case::exact(vec![ps("template.spec.template", Some(2))], vec![ps("template.spec.template", Some(2))])]
    #[case::absent_is_one(vec![ps("template", None)], vec![ps("template", Some(1))])]
    #[case::order_ignored(vec![ps("template.b", Some(2)), ps("template.a", None)], vec![ps("template.a", Some(1)), ps("template.b", Some(2))])]
    fn accepts(#[case] declared: Vec<AppWrapperPodSet>, #[case] inferred: Vec<AppWrapperPodSet>) {
        assert_eq!(validate_pod_sets(&declared, &inferred), Ok(()));
    }

    #[test]
    fn annotations_are_not_compared() {
        let mut declared = ps("template", Some(1));
        declared.annotations.insert("k".into(), "v".into());
        assert_eq!(
            validate_pod_sets(&[declared], &[ps("template", Some(1))]),
            Ok(())
        );
    }

    #[rstest]
    #[case::duplicate_even_for_unknown_gvk(vec![ps("template.a", None), ps("template.a", Some(2))], vec![],
        "multiple DeclaredPodSets with path 'template.a'")]
    #[case::count(vec![ps("template.a", None)], vec![ps("template.a", Some(1)), ps("template.b", Some(1))],
        "DeclaredPodSet count 1 differs from inferred count 2")]
    #[case::missing(vec![ps("template.a", None), ps("template.c", None)], vec![ps("template.a", Some(1)), ps("template.b", Some(1))],
        "PodSet with path 'template.b' is missing")]
    #[case::replicas(vec![ps("template.spec.template", None)], vec![ps("template.spec.template", Some(3))],
        "replica count 1 differs from inferred count 3 for PodSet at path position 'template.spec.template'")]
    fn rejects(
        #[case] declared: Vec<AppWrapperPodSet>,
        #[case] inferred: Vec<AppWrapperPodSet>,
        #[case] message: &str,
    ) {
        assert_eq!(
            validate_pod_sets(&declared, &inferred).map_err(|e| e.to_string()),
            Err(message.to_string())
        );
    }
}
