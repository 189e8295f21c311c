//! The AppWrapper a reconcile starts from comes from the watch cache, which may not yet show
//! the controller's own last write. Deciding from it would redo what that write already did
//! (another event, another create, another reset counted). So each reconcile's writes are
//! remembered as the resourceVersions they left behind; a cached AppWrapper at one of those is
//! skipped, since the watch event of the newer version triggers another reconcile.
//! resourceVersions are opaque: they are only compared for equality.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

pub struct OwnWrites<K> {
    behind: Mutex<HashMap<K, Vec<String>>>,
}

impl<K> Default for OwnWrites<K> {
    fn default() -> Self {
        OwnWrites {
            behind: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash> OwnWrites<K> {
    /// A reconcile of `key` went through `versions` in order (the first as read, each later
    /// one written by it): all but the last are behind.
    pub fn record(&self, key: K, versions: &[String]) {
        let Some(last) = versions.last() else {
            return;
        };
        let superseded: Vec<String> = versions.iter().filter(|v| *v != last).cloned().collect();
        if superseded.is_empty() {
            return;
        }
        if let Ok(mut behind) = self.behind.lock() {
            behind.entry(key).or_default().extend(superseded);
        }
    }

    /// Whether the cached `version` of `key` is one the controller has written past. A version
    /// not among them means the cache has caught up, and they are forgotten.
    pub fn is_behind(&self, key: &K, version: &str) -> bool {
        let Ok(mut behind) = self.behind.lock() else {
            return false;
        };
        match behind.get(key) {
            Some(versions) if versions.iter().any(|v| v == version) => true,
            Some(_) => {
                behind.remove(key);
                false
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_behind_the_own_writes_is_skipped_until_it_catches_up() {
        let v = |s: &str| s.to_owned();
        let writes = OwnWrites::default();
        writes.record("aw", &[v("1"), v("1")]);
        assert!(!writes.is_behind(&"aw", "1"), "read only, wrote nothing");
        writes.record("aw", &[v("1"), v("2"), v("2"), v("3"), v("3")]);
        let cases = [
            ("1", true),
            ("2", true),
            ("1", true),
            ("3", false),
            ("1", false),
        ];
        for (cached, behind) in cases {
            assert_eq!(writes.is_behind(&"aw", cached), behind, "cached {cached}");
        }
        assert!(!writes.is_behind(&"other", "1"));
    }
}
