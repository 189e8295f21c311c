//! The in-place Kueue upgrade of the `@kueue-upgrade` scenario, pending until it runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A Kueue started at `from` for the `@kueue-upgrade` scenario, which replaces it in place
/// with `to`, the Kueue under test: the run's, before any other scenario runs, or the one on
/// the scenario's own cluster.
pub struct PendingUpgrade {
    pub from: clusters::kueue::KueueVersion,
    pub to: clusters::kueue::KueueSource,
    kueue: KueueHandle,
    done: AtomicBool,
}

/// The run's Kueue lives as long as the process; a scenario's own as long as its cluster.
pub enum KueueHandle {
    Run(&'static tokio::sync::Mutex<clusters::kueue::Kueue>),
    Own(Arc<tokio::sync::Mutex<clusters::kueue::Kueue>>),
}

impl std::ops::Deref for KueueHandle {
    type Target = tokio::sync::Mutex<clusters::kueue::Kueue>;

    fn deref(&self) -> &Self::Target {
        match self {
            KueueHandle::Run(kueue) => kueue,
            KueueHandle::Own(kueue) => kueue,
        }
    }
}

impl PendingUpgrade {
    pub fn new(
        from: clusters::kueue::KueueVersion,
        to: clusters::kueue::KueueSource,
        kueue: KueueHandle,
    ) -> Self {
        PendingUpgrade {
            from,
            to,
            kueue,
            done: AtomicBool::new(false),
        }
    }

    pub fn done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// What Kueue runs now.
    pub async fn running(&self) -> clusters::kueue::KueueSource {
        self.kueue.lock().await.source().clone()
    }

    /// The releases the upgrade runs in turn: each pinned release between `from` and `to`, then
    /// `to`.
    pub fn steps(&self) -> Vec<clusters::kueue::KueueSource> {
        let mut steps: Vec<clusters::kueue::KueueSource> = match &self.to {
            clusters::kueue::KueueSource::Release(to) => self
                .from
                .pinned_between(*to)
                .into_iter()
                .map(clusters::kueue::KueueSource::Release)
                .collect(),
            _ => Vec::new(),
        };
        steps.push(self.to.clone());
        steps
    }

    /// Replaces the running Kueue with `to` in place, through each pinned release between
    /// (once: later calls do nothing). Returns whether this call upgraded it.
    pub async fn upgrade(&self) -> anyhow::Result<bool> {
        let mut kueue = self.kueue.lock().await;
        if self.done() {
            return Ok(false);
        }
        let mut at = self.from.to_string();
        for step in self.steps() {
            kueue.upgrade(&step).await.map_err(|e| {
                anyhow::anyhow!(
                    "upgrading Kueue from {at} to {} (on the way from {} to {}): {e}",
                    step.label(),
                    self.from,
                    self.to.label()
                )
            })?;
            at = step.label();
        }
        self.done.store(true, Ordering::SeqCst);
        Ok(true)
    }
}
