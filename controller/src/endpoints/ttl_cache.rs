//! Answers kept for a while, so that every scrape does not cost the API server a review.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Beyond this many live entries the cache starts over rather than grow.
const CAPACITY: usize = 4096;

#[derive(Debug)]
pub struct TtlCache<K, V> {
    entries: HashMap<K, (Instant, V)>,
}

impl<K, V> Default for TtlCache<K, V> {
    fn default() -> Self {
        TtlCache {
            entries: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, V: Clone> TtlCache<K, V> {
    pub fn get(&mut self, key: &K, now: Instant) -> Option<V> {
        match self.entries.get(key) {
            Some((expires, value)) if now < *expires => Some(value.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    pub fn insert(&mut self, key: K, value: V, ttl: Duration, now: Instant) {
        self.entries.retain(|_, (expires, _)| now < *expires);
        if self.entries.len() >= CAPACITY {
            self.entries.clear();
        }
        self.entries.insert(key, (now + ttl, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_lives_for_its_ttl() {
        let t0 = Instant::now();
        let mut cache = TtlCache::default();
        cache.insert("token", 1, Duration::from_secs(60), t0);
        assert_eq!(cache.get(&"token", t0 + Duration::from_secs(59)), Some(1));
        assert_eq!(cache.get(&"token", t0 + Duration::from_secs(60)), None);
        assert_eq!(cache.get(&"other", t0), None);
    }

    #[test]
    fn a_full_cache_starts_over() {
        let t0 = Instant::now();
        let mut cache = TtlCache::default();
        for n in 0..CAPACITY {
            cache.insert(n, n, Duration::from_secs(60), t0);
        }
        cache.insert(CAPACITY, CAPACITY, Duration::from_secs(60), t0);
        assert_eq!(cache.get(&0, t0), None);
        assert_eq!(cache.get(&CAPACITY, t0), Some(CAPACITY));
    }
}
