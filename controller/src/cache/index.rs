//! A map kept from one watch's events. A relist replaces it whole, so what the relist no
//! longer returns is dropped; it counts as synced from its first complete list on.

use std::collections::BTreeMap;
use std::ops::RangeBounds;

/// A watch event, reduced to a key and the value kept for it.
#[derive(Clone, Debug, PartialEq)]
pub enum Change<K, V> {
    Apply(K, V),
    Delete(K),
    /// A relist begins.
    Init,
    InitApply(K, V),
    /// The relist is complete.
    InitDone,
}

#[derive(Debug)]
pub struct Index<K, V> {
    live: BTreeMap<K, V>,
    relisting: Option<BTreeMap<K, V>>,
    synced: bool,
}

impl<K, V> Default for Index<K, V> {
    fn default() -> Self {
        Index {
            live: BTreeMap::new(),
            relisting: None,
            synced: false,
        }
    }
}

impl<K: Ord, V> Index<K, V> {
    pub fn apply(&mut self, change: Change<K, V>) {
        match change {
            Change::Apply(key, value) => {
                self.live.insert(key, value);
            }
            Change::Delete(key) => {
                self.live.remove(&key);
            }
            Change::Init => self.relisting = Some(BTreeMap::new()),
            Change::InitApply(key, value) => {
                self.relisting
                    .get_or_insert_with(BTreeMap::new)
                    .insert(key, value);
            }
            Change::InitDone => {
                if let Some(listed) = self.relisting.take() {
                    self.live = listed;
                }
                self.synced = true;
            }
        }
    }

    /// Whether a complete list has been seen; before that, an absent key proves nothing.
    pub fn synced(&self) -> bool {
        self.synced
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.live.get(key)
    }

    pub fn range(&self, keys: impl RangeBounds<K>) -> impl Iterator<Item = (&K, &V)> {
        self.live.range(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Change::*;

    fn run(changes: Vec<Change<&'static str, u32>>) -> (Vec<(&'static str, u32)>, bool) {
        let mut index = Index::default();
        for change in changes {
            index.apply(change);
        }
        let entries = index.range(..).map(|(k, v)| (*k, *v)).collect();
        (entries, index.synced())
    }

    #[test]
    fn follows_the_watch() {
        type Case = (
            Vec<Change<&'static str, u32>>,
            Vec<(&'static str, u32)>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (vec![], vec![], false),
            (vec![Init, InitApply("a", 1)], vec![], false),
            (
                vec![Init, InitApply("a", 1), InitDone],
                vec![("a", 1)],
                true,
            ),
            (
                vec![
                    Init,
                    InitApply("a", 1),
                    InitDone,
                    Apply("b", 2),
                    Apply("a", 3),
                ],
                vec![("a", 3), ("b", 2)],
                true,
            ),
            (
                vec![Init, InitApply("a", 1), InitDone, Delete("a")],
                vec![],
                true,
            ),
            // A relist drops what it no longer returns, and keeps the old map until it is done.
            (
                vec![Init, InitApply("a", 1), InitDone, Init, InitApply("b", 2)],
                vec![("a", 1)],
                true,
            ),
            (
                vec![
                    Init,
                    InitApply("a", 1),
                    InitDone,
                    Init,
                    InitApply("b", 2),
                    InitDone,
                ],
                vec![("b", 2)],
                true,
            ),
        ];
        for (changes, entries, synced) in cases {
            let described = format!("{changes:?}");
            assert_eq!(run(changes), (entries, synced), "{described}");
        }
    }
}
