//! The AppWrapper work queue as controller-runtime's metrics see it. kube-runtime keeps its
//! queue inside the controller, so the queue is followed from outside: a trigger adds its
//! AppWrapper, a requeue adds it when due, and a reconcile takes it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct QueueTracker<K> {
    /// Queued items and since when.
    queued: HashMap<K, Instant>,
    /// Requeued items and when they become due.
    due: HashMap<K, Instant>,
}

impl<K> Default for QueueTracker<K> {
    fn default() -> Self {
        QueueTracker {
            queued: HashMap::new(),
            due: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> QueueTracker<K> {
    /// `key` is triggered at `now`. Returns the number of adds (an item already queued is not
    /// added again).
    pub fn add(&mut self, key: K, now: Instant) -> u64 {
        let mut adds = self.promote(now);
        self.due.remove(&key);
        if let Entry::Vacant(entry) = self.queued.entry(key) {
            entry.insert(now);
            adds += 1;
        }
        adds
    }

    /// `key` is requeued to become due at `due` (the earliest requeue wins).
    pub fn add_at(&mut self, key: K, due: Instant) {
        if self.queued.contains_key(&key) {
            return;
        }
        let at = self.due.entry(key).or_insert(due);
        *at = (*at).min(due);
    }

    /// Requeues due by `now` join the queue, as from when they fell due. Returns the number of
    /// adds.
    pub fn promote(&mut self, now: Instant) -> u64 {
        let ready: Vec<(K, Instant)> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, at)| (k.clone(), *at))
            .collect();
        let mut adds = 0;
        for (key, at) in ready {
            self.due.remove(&key);
            if let Entry::Vacant(entry) = self.queued.entry(key) {
                entry.insert(at);
                adds += 1;
            }
        }
        adds
    }

    /// `key` is taken by a reconcile at `now`: how long it was queued (`None` when it was not),
    /// and the adds of requeues that fell due meanwhile.
    pub fn take(&mut self, key: &K, now: Instant) -> (Option<Duration>, u64) {
        let adds = self.promote(now);
        let waited = self
            .queued
            .remove(key)
            .map(|since| now.saturating_duration_since(since));
        (waited, adds)
    }

    pub fn depth(&self) -> usize {
        self.queued.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_trigger_queues_once_until_taken() {
        let t0 = Instant::now();
        let mut q = QueueTracker::default();
        assert_eq!(q.add("a", t0), 1);
        assert_eq!(q.add("a", t0 + MS), 0, "already queued");
        assert_eq!(q.add("b", t0 + MS), 1);
        assert_eq!(q.depth(), 2);
        assert_eq!(q.take(&"a", t0 + 5 * MS), (Some(5 * MS), 0));
        assert_eq!(q.depth(), 1);
        assert_eq!(q.take(&"a", t0 + 6 * MS), (None, 0), "not queued any more");
    }

    #[test]
    fn a_requeue_joins_the_queue_when_due() {
        let t0 = Instant::now();
        let mut q = QueueTracker::default();
        q.add_at("a", t0 + 10 * MS);
        q.add_at("a", t0 + 20 * MS);
        assert_eq!(q.promote(t0 + 5 * MS), 0);
        assert_eq!(q.depth(), 0, "not due yet");
        assert_eq!(
            q.take(&"a", t0 + 12 * MS),
            (Some(2 * MS), 1),
            "queued from when it fell due, the earliest requeue"
        );
        assert_eq!(q.promote(t0 + 30 * MS), 0, "the later requeue merged");
    }

    #[test]
    fn a_trigger_before_a_requeue_falls_due_replaces_it() {
        let t0 = Instant::now();
        let mut q = QueueTracker::default();
        q.add_at("a", t0 + 10 * MS);
        assert_eq!(q.add("a", t0 + 2 * MS), 1);
        assert_eq!(q.take(&"a", t0 + 3 * MS), (Some(MS), 0));
        assert_eq!(q.promote(t0 + 20 * MS), 0);
        assert_eq!(q.depth(), 0);
    }

    #[test]
    fn a_requeue_of_a_queued_item_changes_nothing() {
        let t0 = Instant::now();
        let mut q = QueueTracker::default();
        q.add("a", t0);
        q.add_at("a", t0 + MS);
        assert_eq!(q.promote(t0 + 2 * MS), 0);
        assert_eq!(q.depth(), 1);
    }
}
