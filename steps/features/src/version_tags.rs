//! Tags by the versions a scenario needs: `@kueue>=0.18` runs only where the Kueue under test
//! is 0.18.0 or newer, `@kubernetes<1.37` only where the API server is older than 1.37. A
//! requirement is a Cargo-style comparison (`>=`, `>`, `<`, `<=`, `=`), several joined by `,`
//! (`@kueue>=0.17,<0.19`). Where a version is not met the scenario is skipped with the rule;
//! where the run does not know a version (a Kueue checkout, an API server that did not say)
//! the scenario runs.

use semver::{Version, VersionReq};

/// What a version tag is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Product {
    Kueue,
    Kubernetes,
}

impl Product {
    fn name(self) -> &'static str {
        match self {
            Product::Kueue => "Kueue",
            Product::Kubernetes => "Kubernetes",
        }
    }
}

/// A tag such as `kueue>=0.18` (without its `@`), parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionTag {
    pub tag: String,
    pub product: Product,
    pub requirement: VersionReq,
}

/// The versions of the run's stand, where known.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StandVersions {
    pub kueue: Option<Version>,
    pub kubernetes: Option<Version>,
}

impl StandVersions {
    /// From tags such as `v0.19.2` and `v1.36.3` (a pre-release or build suffix, as in
    /// `v1.37.0-alpha.1` or `v1.36.3+k3s1`, counts as its release); text that is no version
    /// gives `None`.
    pub fn of(kueue: Option<&str>, kubernetes: Option<&str>) -> StandVersions {
        StandVersions {
            kueue: kueue.and_then(release),
            kubernetes: kubernetes.and_then(release),
        }
    }
}

fn release(tag: &str) -> Option<Version> {
    let v = Version::parse(tag.trim().trim_start_matches('v')).ok()?;
    Some(Version::new(v.major, v.minor, v.patch))
}

/// `tag` (without its `@`) as a version tag: `None` when it is no version tag at all, an
/// error (for the feature file's problems) when it names a product but no valid requirement.
pub fn parse(tag: &str) -> Option<Result<VersionTag, String>> {
    let (product, rest) = [
        ("kueue", Product::Kueue),
        ("kubernetes", Product::Kubernetes),
    ]
    .into_iter()
    .find_map(|(name, product)| {
        let rest = tag.strip_prefix(name)?;
        rest.starts_with(['<', '>', '=']).then_some((product, rest))
    })?;
    Some(
        VersionReq::parse(rest)
            .map_err(|e| format!("@{tag}: {e}; a version tag reads like {}", example(product)))
            .and_then(|requirement| {
                if rest.contains(['^', '~', '*']) || requirement.comparators.is_empty() {
                    Err(format!(
                        "@{tag}: only the comparisons >=, >, <, <= and = are allowed"
                    ))
                } else {
                    Ok(VersionTag {
                        tag: tag.to_string(),
                        product,
                        requirement,
                    })
                }
            }),
    )
}

fn example(product: Product) -> &'static str {
    match product {
        Product::Kueue => "@kueue>=0.18 or @kueue>=0.17,<0.19",
        Product::Kubernetes => "@kubernetes>=1.36 or @kubernetes>=1.35,<1.37",
    }
}

/// Why a scenario with these tags does not run on a stand of these versions, if it does not.
pub fn unmet<'a>(
    tags: impl IntoIterator<Item = &'a String>,
    versions: &StandVersions,
) -> Option<String> {
    tags.into_iter()
        .filter_map(|t| parse(t)?.ok())
        .find_map(|needed| {
            let have = match needed.product {
                Product::Kueue => versions.kueue.as_ref(),
                Product::Kubernetes => versions.kubernetes.as_ref(),
            }?;
            (!needed.requirement.matches(have)).then(|| {
                format!(
                    "@{}: needs {} {}; this run's is v{have}",
                    needed.tag,
                    needed.product.name(),
                    needed.requirement
                )
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn other_tags_are_no_version_tags() {
        for tag in [
            "serial",
            "kueue",
            "kueue-upgrade",
            "kubernetes",
            "kueueish>=1",
        ] {
            assert_eq!(parse(tag), None, "{tag}");
        }
    }

    #[test]
    fn bad_requirements_say_how_one_reads() {
        let table = [
            ("kueue>=banana", "a version tag reads like @kueue>=0.18"),
            ("kubernetes=", "@kubernetes>=1.35,<1.37"),
            ("kueue>=0.18,", "kueue>=0.18,"),
            ("kueue=~0.18", "a version tag reads like @kueue>=0.18"),
            ("kueue>=^0.18", "a version tag reads like"),
            ("kueue>=0.*", "only the comparisons"),
        ];
        for (tag, want) in table {
            let e = parse(tag).expect("a version tag").unwrap_err();
            assert!(e.contains(want), "{tag}: {e}");
        }
    }

    #[test]
    fn a_scenario_runs_only_where_its_versions_are_met() {
        let stand = StandVersions::of(Some("v0.17.0"), Some("v1.36.3"));
        let table: &[(&[&str], Option<&str>)] = &[
            (&["serial"], None),
            (
                &["kueue>=0.18"],
                Some("@kueue>=0.18: needs Kueue >=0.18; this run's is v0.17.0"),
            ),
            (&["kueue>=0.17"], None),
            (&["kueue<0.18"], None),
            (&["kueue>=0.17,<0.18"], None),
            (
                &["kueue=0.18.4"],
                Some("@kueue=0.18.4: needs Kueue =0.18.4; this run's is v0.17.0"),
            ),
            (&["kubernetes>=1.36"], None),
            (
                &["kubernetes>=1.37"],
                Some("@kubernetes>=1.37: needs Kubernetes >=1.37; this run's is v1.36.3"),
            ),
            (
                &["kubernetes<1.36"],
                Some("@kubernetes<1.36: needs Kubernetes <1.36; this run's is v1.36.3"),
            ),
            (&["kubernetes<=1.36"], None),
        ];
        for (list, want) in table {
            assert_eq!(unmet(&tags(list), &stand).as_deref(), *want, "{list:?}");
        }
    }

    #[test]
    fn an_unknown_version_runs_the_scenario() {
        let unknown = StandVersions::of(Some("main"), None);
        assert_eq!(unknown, StandVersions::default());
        assert_eq!(
            unmet(&tags(&["kueue>=9.0", "kubernetes>=9.0"]), &unknown),
            None
        );
    }

    #[test]
    fn suffixes_count_as_their_release() {
        let stand = StandVersions::of(Some("v0.19.2"), Some("v1.37.0-alpha.1"));
        assert_eq!(stand.kubernetes, Some(Version::new(1, 37, 0)));
        assert_eq!(unmet(&tags(&["kubernetes>=1.37"]), &stand), None);
        let k3s = StandVersions::of(None, Some("v1.36.3+k3s1"));
        assert_eq!(k3s.kubernetes, Some(Version::new(1, 36, 3)));
    }
}
