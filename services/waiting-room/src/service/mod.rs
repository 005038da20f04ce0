//! The waiting room's operations, in domain terms (no wire types): a fan joins and asks
//! where they stand ([`status`]); staff and services configure an event's queue, steer
//! admission, report completions and seat counts; anyone checks the pre-queue shuffle
//! ([`audit`]). Each change goes to Redis as one script ([`crate::store`]) and drops
//! this replica's cached snapshot of the event.

pub mod admissions;
pub mod audit;
pub mod status;
pub mod waiting_list;

use std::sync::Arc;
use std::time::Duration;

use stadium_tokens::{AdmissionIssuer, QueueTickets, SigningKeyRing};

use crate::cache::SnapshotCache;
use crate::clock::Clock;
use crate::domain::{EventId, FanId, Inventory, QueueSnapshot};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::store::{Configured, EventSettings, Store};
use crate::tickets_seen::TicketsSeen;

pub use audit::JoinOrderPage;
pub use status::{Admission, FanStatus};

/// The queue of every event, on Redis, with this replica's snapshots and tokens.
pub struct WaitingRoomService {
    store: Store,
    cache: SnapshotCache,
    clock: Arc<dyn Clock>,
    tickets: TicketsSeen,
    admission: AdmissionIssuer,
    ring: SigningKeyRing,
    /// Admission tokens this replica has handed out, by (event, fan): `(token, exp ms,
    /// the event's revocation version when the store last vouched for it)`.
    admitted: moka::future::Cache<(EventId, FanId), (String, u64, u64)>,
    metrics: Metrics,
    default_admission_ttl: Duration,
    inventory_ttl: Duration,
}

impl std::fmt::Debug for WaitingRoomService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitingRoomService")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// What [`WaitingRoomService::new`] is built from.
pub struct Parts {
    /// The queue in Redis.
    pub store: Store,
    /// Per-replica snapshots for polls.
    pub cache: SnapshotCache,
    /// Time source.
    pub clock: Arc<dyn Clock>,
    /// Queue ticket issuer and verifier (HS256, secrets shared by the replicas).
    pub tickets: QueueTickets,
    /// Admission token issuer (EdDSA).
    pub admission: AdmissionIssuer,
    /// The admission signing keys (published as a JWKS).
    pub ring: SigningKeyRing,
    /// Queue gauges and counters.
    pub metrics: Metrics,
    /// Admission token lifetime when an event sets none.
    pub default_admission_ttl: Duration,
    /// How long an inventory report steers admission.
    pub inventory_ttl: Duration,
}

impl WaitingRoomService {
    /// The service over `parts`.
    pub fn new(parts: Parts) -> Self {
        let keep = parts.default_admission_ttl.max(Duration::from_secs(60)) * 2;
        Self {
            store: parts.store,
            cache: parts.cache,
            clock: parts.clock,
            tickets: TicketsSeen::new(parts.tickets),
            admission: parts.admission,
            ring: parts.ring,
            admitted: moka::future::Cache::builder()
                .max_capacity(1_000_000)
                .time_to_live(keep)
                .build(),
            metrics: parts.metrics,
            default_admission_ttl: parts.default_admission_ttl,
            inventory_ttl: parts.inventory_ttl,
        }
    }

    /// The time source (tokens presented to the service are checked against it).
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Admission token lifetime for events that set none.
    pub fn default_admission_ttl(&self) -> Duration {
        self.default_admission_ttl
    }

    /// Puts `fan` in `event`'s queue (once: joining again keeps the number) and says
    /// where they stand.
    ///
    /// # Errors
    /// As the store's join ([`Error::EventNotFound`], [`Error::NotOnSale`], Redis);
    /// [`Error::QueueRestoring`] when this replica knows the event and the store lost
    /// it (the box office configures it again within its resync interval).
    pub async fn join(&self, event: &EventId, fan: &FanId) -> Result<FanStatus, Error> {
        let number = match self.store.join(event, fan).await {
            Err(Error::EventNotFound(_)) if self.cache.knows(event) => {
                return Err(Error::QueueRestoring(event.to_string()));
            }
            joined => joined?,
        };
        self.metrics.joined(event);
        let ticket = self.ticket(event, fan, number)?;
        let snap = match self.cache.get(event).await {
            // The store has the event again (the join found it): the loss this
            // replica remembers is over.
            Err(Error::QueueRestoring(_)) => {
                self.cache.invalidate(event);
                self.cache.get(event).await?
            }
            read => read?,
        };
        self.build_status(event, fan, number, ticket, &snap).await
    }

    /// The admission signing keys as a JWKS (RFC 7517) document.
    ///
    /// # Errors
    /// [`Error::Internal`] when the keys cannot be exported.
    pub fn jwks_json(&self) -> Result<String, Error> {
        self.ring
            .jwks_json()
            .map_err(|e| Error::Internal(format!("exporting the JWKS: {e}")))
    }

    /// Records that `fan` is done with `event` (the place returns to the active-fan
    /// cap); `true` when it freed a place, `false` for a repeated report.
    ///
    /// # Errors
    /// As the store.
    pub async fn complete(&self, event: &EventId, fan: &FanId) -> Result<bool, Error> {
        let freed = self.store.complete(event, fan).await?;
        if freed {
            self.metrics.completed(event);
        }
        Ok(freed)
    }

    /// Configures `event`'s queue; what that did, and the queue as it is now.
    ///
    /// # Errors
    /// As the store ([`Error::AlreadyOpen`], Redis).
    pub async fn configure(
        &self,
        event: &EventId,
        settings: &EventSettings,
    ) -> Result<(Configured, QueueSnapshot), Error> {
        let configured = self.store.configure(event, settings).await?;
        Ok((configured, self.changed(event).await?))
    }

    /// Sets `event`'s admission rate, fans per minute; the queue as it is now.
    ///
    /// # Errors
    /// As the store.
    pub async fn set_rate(
        &self,
        event: &EventId,
        fans_per_minute: u32,
    ) -> Result<QueueSnapshot, Error> {
        self.store.set_rate(event, fans_per_minute).await?;
        self.changed(event).await
    }

    /// Pauses or resumes `event`'s admission; the queue as it is now.
    ///
    /// # Errors
    /// As the store.
    pub async fn set_paused(&self, event: &EventId, paused: bool) -> Result<QueueSnapshot, Error> {
        self.store.set_paused(event, paused).await?;
        self.changed(event).await
    }

    /// Records `event`'s seat counts (an older report than the last changes nothing);
    /// `true` when recorded, with the queue as it is now.
    ///
    /// # Errors
    /// As the store.
    pub async fn report_inventory(
        &self,
        event: &EventId,
        inventory: &Inventory,
    ) -> Result<(bool, QueueSnapshot), Error> {
        let ttl_ms = u64::try_from(self.inventory_ttl.as_millis()).unwrap_or(u64::MAX);
        let recorded = self
            .store
            .report_inventory(event, inventory, ttl_ms)
            .await?;
        Ok((recorded, self.changed(event).await?))
    }

    /// `event`'s queue as Redis has it now (not a cached snapshot).
    ///
    /// # Errors
    /// As the store.
    pub async fn snapshot(&self, event: &EventId) -> Result<QueueSnapshot, Error> {
        self.store.snapshot(event).await
    }

    /// Drops this replica's snapshot of `event` after a change, and reads it afresh.
    async fn changed(&self, event: &EventId) -> Result<QueueSnapshot, Error> {
        self.cache.invalidate(event);
        self.store.snapshot(event).await
    }
}
