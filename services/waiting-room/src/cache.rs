//! The per-replica cache of queue snapshots that keeps position polls off Redis.
//!
//! Each event's snapshot is refreshed at most once per refresh interval (by the
//! injected clock), by one caller while concurrent callers wait for its answer
//! (single flight), so however many fans poll a replica, Redis sees at most one
//! snapshot read per event per interval from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::clock::Clock;
use crate::domain::{EventId, QueueSnapshot};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::store::Store;

#[derive(Default)]
struct Slot {
    value: Mutex<Option<(QueueSnapshot, u64)>>,
    refresh: tokio::sync::Mutex<()>,
}

/// Snapshots by event, at most `refresh_ms` old by the clock.
pub struct SnapshotCache {
    store: Store,
    clock: Arc<dyn Clock>,
    refresh_ms: u64,
    metrics: Metrics,
    slots: Mutex<HashMap<EventId, Arc<Slot>>>,
}

impl std::fmt::Debug for SnapshotCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotCache")
            .field("refresh_ms", &self.refresh_ms)
            .finish_non_exhaustive()
    }
}

// A poisoned lock only means another task panicked between two plain assignments;
// the data is still whole.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SnapshotCache {
    /// A cache over `store` whose entries live `refresh_ms` milliseconds (0 = every
    /// read goes to Redis); each refresh records the queue gauges on `metrics`.
    pub fn new(store: Store, clock: Arc<dyn Clock>, refresh_ms: u64, metrics: Metrics) -> Self {
        Self {
            store,
            clock,
            refresh_ms,
            metrics,
            slots: Mutex::new(HashMap::new()),
        }
    }

    fn fresh(&self, slot: &Slot) -> Option<QueueSnapshot> {
        let now = self.clock.now_ms();
        lock(&slot.value)
            .as_ref()
            .filter(|(_, at)| now < at.saturating_add(self.refresh_ms))
            .map(|(snap, _)| snap.clone())
    }

    /// The event's snapshot, from the cache when fresh enough.
    ///
    /// # Errors
    /// As [`Store::snapshot`]; unknown events are not cached.
    pub async fn get(&self, event: &EventId) -> Result<QueueSnapshot, Error> {
        let slot = Arc::clone(lock(&self.slots).entry(event.clone()).or_default());
        if let Some(snap) = self.fresh(&slot) {
            return Ok(snap);
        }
        let _flight = slot.refresh.lock().await;
        if let Some(snap) = self.fresh(&slot) {
            return Ok(snap);
        }
        let fetched_at = self.clock.now_ms();
        match self.store.snapshot(event).await {
            Ok(snap) => {
                self.metrics.snapshot(event, &snap);
                *lock(&slot.value) = Some((snap.clone(), fetched_at));
                Ok(snap)
            }
            Err(error) => {
                if matches!(error, Error::EventNotFound(_)) {
                    lock(&self.slots).remove(event);
                }
                Err(error)
            }
        }
    }

    /// Forgets the event's snapshot, so the next read sees an admin's change at once.
    pub fn invalidate(&self, event: &EventId) {
        if let Some(slot) = lock(&self.slots).get(event) {
            *lock(&slot.value) = None;
        }
    }
}
