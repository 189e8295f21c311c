//! Kueue versions and what differs between them.

/// A Kueue release tag such as `v0.19.2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KueueVersion(pub u32, pub u32, pub u32);

impl KueueVersion {
    pub fn parse(tag: &str) -> Result<Self, String> {
        let bad = || format!("{tag:?} is not a Kueue version; expected a tag like v0.19.2");
        let mut parts = tag.strip_prefix('v').ok_or_else(bad)?.split('.');
        let mut next = || parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad);
        let version = Self(next()?, next()?, next()?);
        Ok(version)
    }

    /// Feature gates for the generated configuration. An unknown gate name stops Kueue, so
    /// each gate is named only for the versions that have it.
    pub fn feature_gates(&self) -> Vec<(&'static str, bool)> {
        // The visibility server needs files under /visibility and an aggregated API: not here.
        let mut gates = vec![("VisibilityOnDemand", false)];
        if *self >= Self(0, 19, 0) {
            // 0.19 turns WaitForPodsReady on by default; the suite decides readiness itself.
            gates.push(("DisableWaitForPodsReady", true));
        }
        gates
    }
}

impl KueueVersion {
    /// Where an in-place upgrade to `self` starts when nobody says: the newest pinned release
    /// older than `self` (`v0.18.4` for `v0.19.2`); `None` when no pinned release is older.
    pub fn previous_pinned(&self) -> Option<KueueVersion> {
        crate::toolchain::KUEUE_PINNED
            .iter()
            .filter_map(|tag| KueueVersion::parse(tag).ok())
            .filter(|v| v < self)
            .max()
    }
}

impl KueueVersion {
    /// The pinned releases strictly between `self` and `to`, oldest first: the steps an
    /// upgrade from `self` to `to` takes on the way (`[v0.18.4]` from v0.17.0 to v0.19.2).
    pub fn pinned_between(&self, to: KueueVersion) -> Vec<KueueVersion> {
        let mut between: Vec<KueueVersion> = crate::toolchain::KUEUE_PINNED
            .iter()
            .filter_map(|tag| KueueVersion::parse(tag).ok())
            .filter(|v| v > self && *v < to)
            .collect();
        between.sort();
        between.dedup();
        between
    }
}

impl std::fmt::Display for KueueVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}.{}.{}", self.0, self.1, self.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_and_rejects_other_text() {
        assert_eq!(KueueVersion::parse("v0.19.2"), Ok(KueueVersion(0, 19, 2)));
        assert!(KueueVersion::parse("0.19.2").is_err());
        assert!(KueueVersion::parse("v0.19").is_err());
        assert!(
            KueueVersion::parse("latest")
                .unwrap_err()
                .contains("v0.19.2")
        );
    }

    #[test]
    fn an_upgrade_starts_by_default_from_the_pinned_release_before() {
        let v = |tag: &str| KueueVersion::parse(tag).unwrap();
        assert_eq!(v("v0.19.2").previous_pinned(), Some(v("v0.18.4")));
        assert_eq!(v("v0.20.0").previous_pinned(), Some(v("v0.19.2")));
        assert_eq!(v("v0.19.0").previous_pinned(), Some(v("v0.18.4")));
        assert_eq!(v("v0.18.4").previous_pinned(), Some(v("v0.17.0")));
        assert_eq!(v("v0.17.0").previous_pinned(), None);
    }

    #[test]
    fn an_upgrade_steps_through_the_pinned_releases_between() {
        let v = |tag: &str| KueueVersion::parse(tag).unwrap();
        assert_eq!(v("v0.17.0").pinned_between(v("v0.19.2")), [v("v0.18.4")]);
        assert_eq!(v("v0.18.4").pinned_between(v("v0.19.2")), []);
        assert_eq!(v("v0.17.0").pinned_between(v("v0.18.4")), []);
        assert_eq!(v("v0.16.0").pinned_between(v("v0.20.0")).len(), 3);
    }

    #[test]
    fn wait_for_pods_ready_gate_only_where_it_exists() {
        let has = |v: KueueVersion| {
            v.feature_gates()
                .iter()
                .any(|(g, _)| *g == "DisableWaitForPodsReady")
        };
        assert!(has(KueueVersion(0, 19, 2)));
        assert!(!has(KueueVersion(0, 18, 4)));
        assert!(!has(KueueVersion(0, 17, 8)));
        assert!(
            KueueVersion(0, 17, 8)
                .feature_gates()
                .contains(&("VisibilityOnDemand", false))
        );
    }
}
