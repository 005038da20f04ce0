//! The per-replica cache of queue snapshots that keeps position polls off Redis.
//!
//! Each event's snapshot is refreshed at most once per refresh interval (by the
//! injected clock), by one caller while concurrent callers wait for its answer
//! (single flight), so however many fans poll a replica, Redis sees at most one
//! snapshot read per event per interval from it.
//!
//! An event this replica has served (or been shown a signed ticket for) that the
//! store no longer has was lost with Redis's data: that answer is kept for the same
//! interval ([`Error::QueueRestoring`]), so fans polling through the outage cost Redis
//! no more than before. An event never seen is not kept: any fan can name one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::clock::Clock;
use crate::domain::{EventId, QueueSnapshot};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::store::Store;

#[derive(Default)]
struct Slot {
    /// The last read (`None`: the store did not have the event) and when, clock ms.
    value: Mutex<Option<(Option<QueueSnapshot>, u64)>>,
    /// Whether the event is known to exist: read from the store, or vouched for by a
    /// signed ticket.
    known: AtomicBool,
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

    fn fresh(&self, slot: &Slot, event: &EventId) -> Option<Result<QueueSnapshot, Error>> {
        let now = self.clock.now_ms();
        lock(&slot.value)
            .as_ref()
            .filter(|(_, at)| now < at.saturating_add(self.refresh_ms))
            .map(|(read, _)| {
                read.clone()
                    .ok_or_else(|| Error::QueueRestoring(event.to_string()))
            })
    }

    /// The event's snapshot, from the cache when fresh enough.
    ///
    /// # Errors
    /// As [`Store::snapshot`]; [`Error::QueueRestoring`] for an event this replica
    /// knows that the store lost; an event never known answers
    /// [`Error::EventNotFound`] and is not cached.
    pub async fn get(&self, event: &EventId) -> Result<QueueSnapshot, Error> {
        self.read(event, false).await
    }

    /// As [`SnapshotCache::get`] for a caller who proved that the event exists (a
    /// signed queue ticket names it): an event the store does not have answers
    /// [`Error::QueueRestoring`], and the answer is cached.
    ///
    /// # Errors
    /// As [`Store::snapshot`], with [`Error::QueueRestoring`] for a missing event.
    pub async fn get_vouched(&self, event: &EventId) -> Result<QueueSnapshot, Error> {
        self.read(event, true).await
    }

    async fn read(&self, event: &EventId, vouched: bool) -> Result<QueueSnapshot, Error> {
        let slot = Arc::clone(lock(&self.slots).entry(event.clone()).or_default());
        if vouched {
            slot.known.store(true, Ordering::Relaxed);
        }
        if let Some(read) = self.fresh(&slot, event) {
            return read;
        }
        let _flight = slot.refresh.lock().await;
        if let Some(read) = self.fresh(&slot, event) {
            return read;
        }
        let fetched_at = self.clock.now_ms();
        match self.store.snapshot(event).await {
            Ok(snap) => {
                self.metrics.snapshot(event, &snap);
                slot.known.store(true, Ordering::Relaxed);
                *lock(&slot.value) = Some((Some(snap.clone()), fetched_at));
                Ok(snap)
            }
            Err(Error::EventNotFound(id)) if slot.known.load(Ordering::Relaxed) => {
                tracing::debug!(event_id = %event, "the store lost the event; awaiting its configuration");
                *lock(&slot.value) = Some((None, fetched_at));
                Err(Error::QueueRestoring(id))
            }
            Err(error) => {
                if matches!(error, Error::EventNotFound(_)) {
                    lock(&self.slots).remove(event);
                }
                Err(error)
            }
        }
    }

    /// Whether this replica knows `event` exists (it read it from the store, or was
    /// shown a signed ticket for it), so the store not having it means it was lost.
    pub fn knows(&self, event: &EventId) -> bool {
        lock(&self.slots)
            .get(event)
            .is_some_and(|slot| slot.known.load(Ordering::Relaxed))
    }

    /// Records that the store has numbered `event` up to `numbered` (never lowering the
    /// cached value), so polls with tickets at or below it go on costing no Redis call.
    pub fn saw_numbered(&self, event: &EventId, numbered: u64) {
        if let Some(slot) = lock(&self.slots).get(event)
            && let Some((Some(snap), _)) = lock(&slot.value).as_mut()
        {
            snap.numbered = snap.numbered.max(numbered);
        }
    }

    /// Forgets the event's snapshot, so the next read sees an admin's change at once.
    pub fn invalidate(&self, event: &EventId) {
        if let Some(slot) = lock(&self.slots).get(event) {
            *lock(&slot.value) = None;
        }
    }
}
