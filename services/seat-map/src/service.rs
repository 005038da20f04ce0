//! The caches and the operations the gRPC layer calls.
//!
//! Layouts are cached per event and version (prices, names, seats per claim: checked
//! once per staleness bound), so a box-office change shows within the bound; an unused
//! layout leaves the cache after `--layout-ttl-ms`. Availability is cached per
//! (event, section) and never served older than the staleness bound: each entry expires
//! exactly `bound` after the moment its read began, so the database sees at most one
//! read per section per bound, however many fans ask. Loads are single-flight: moka runs
//! one init future per key and every concurrent caller for that key waits on it, so a
//! thousand requests for a cold section cost one query.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::try_join_all;
use moka::Expiry;
use moka::future::Cache;
use stadium_db::Shards;
use stadium_seating::{Availability, Point, Preference, SectionLayout, Suggestion};
use tracing::instrument;

use crate::domain::{EventId, EventLayout, SectionInfo, SharedSnapshot, Snapshot};
use crate::error::Error;
use crate::metrics::Metrics;
use crate::offered::Offered;
use crate::store;

/// Where to look for suggestions.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// Every section of the event.
    All,
    /// One section.
    Section(u64),
    /// Seats of one price category, in every section that has some.
    Category(String),
}

/// Where the fan would like to sit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Want {
    /// Each section's best view.
    BestView,
    /// Nearest to a point on the plan.
    Point(Point),
    /// Nearest to a seat of the event (e.g. one just lost to SEAT_TAKEN).
    NearSeat(u64),
}

/// A validated `SuggestSeats` request.
#[derive(Debug, Clone, PartialEq)]
pub struct SuggestQuery {
    /// Seats wanted together, at least 1 (the event's per-claim maximum is checked here).
    pub quantity: u32,
    /// Where to look.
    pub scope: Scope,
    /// Preference.
    pub want: Want,
    /// Most suggestions to return, at least 1.
    pub limit: usize,
}

/// Snapshots of sections, each with its section id, in plan order.
pub type SectionSnapshots = Vec<(u64, SharedSnapshot)>;

/// Suggestions and the age of the availability they came from.
#[derive(Debug, Clone)]
pub struct SuggestAnswer {
    /// Best first.
    pub suggestions: Vec<Suggestion>,
    /// The oldest `as_of` of the snapshots consulted (`None` when none was).
    pub as_of: Option<std::time::SystemTime>,
}

/// Entries expire `bound` after their read began, not after their insertion, so the
/// time the query took counts against the bound.
struct StalenessExpiry(Duration);

impl Expiry<(EventId, u64), SharedSnapshot> for StalenessExpiry {
    fn expire_after_create(
        &self,
        _key: &(EventId, u64),
        value: &SharedSnapshot,
        created_at: Instant,
    ) -> Option<Duration> {
        Some(
            self.0
                .saturating_sub(created_at.saturating_duration_since(value.loaded_at)),
        )
    }
}

/// The seat map's state: the databases and the caches.
#[derive(Debug)]
pub struct SeatMapService {
    /// The main database (layouts) and the shards (each section's availability).
    shards: Shards,
    staleness: Duration,
    /// What the layout depends on that box-office staff can change (prices, names,
    /// colours, seats per claim), re-read at most once per staleness bound per event.
    versions: Cache<EventId, Arc<str>>,
    layouts: Cache<(EventId, Arc<str>), Arc<EventLayout>>,
    availability: Cache<(EventId, u64), SharedSnapshot>,
    /// Seats suggested within the staleness bound, passed over by the next requests.
    offered: Offered,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for StalenessExpiry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StalenessExpiry").field(&self.0).finish()
    }
}

impl SeatMapService {
    /// A service reading layouts from the main database of `shards` and each section's
    /// availability from its shard, serving availability at most `staleness` old,
    /// keeping up to `layout_events` layouts for `layout_ttl` each.
    pub fn new(
        shards: Shards,
        staleness: Duration,
        layout_ttl: Duration,
        layout_events: u64,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            shards,
            staleness,
            versions: Cache::builder()
                .max_capacity(layout_events.saturating_mul(4))
                .time_to_live(staleness)
                .build(),
            layouts: Cache::builder()
                .max_capacity(layout_events)
                .time_to_live(layout_ttl)
                .build(),
            // Bounded by sections × events in play; 100k keys is ~10 stadium on-sales.
            availability: Cache::builder()
                .max_capacity(100_000)
                .expire_after(StalenessExpiry(staleness))
                .build(),
            offered: Offered::new(staleness),
            metrics,
        }
    }

    /// The staleness bound.
    pub fn staleness(&self) -> Duration {
        self.staleness
    }

    /// The metrics (with in-process totals).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The event's layout, from cache or one consistent read. The cache is keyed by
    /// the event's current version (prices, category names and colours, seats per
    /// claim), checked with one small query per event at most once per staleness
    /// bound, so a change by the box office shows within that bound.
    ///
    /// Errors: [`Error::EventNotFound`] (not cached, so a new event shows at once),
    /// [`Error::Database`], [`Error::Corrupt`], wrapped in [`Error::Shared`].
    #[instrument(skip_all, fields(event_id = event.get()))]
    pub async fn layout(&self, event: EventId) -> Result<Arc<EventLayout>, Error> {
        let version = self
            .versions
            .try_get_with(event, async {
                let mut conn = self.shards.main().acquire().await?;
                store::layout_version(&mut conn, event)
                    .await?
                    .map(Arc::<str>::from)
                    .ok_or(Error::EventNotFound(event.get()))
            })
            .await
            .map_err(Error::Shared)?;
        self.layouts
            .try_get_with((event, version), async {
                self.metrics.layout_load();
                let mut tx = self.shards.main().begin().await?;
                sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    .execute(&mut *tx)
                    .await?;
                let layout = store::load_layout(&mut tx, event).await?;
                tx.commit().await?;
                layout
                    .map(Arc::new)
                    .ok_or(Error::EventNotFound(event.get()))
            })
            .await
            .map_err(Error::Shared)
    }

    /// One section's availability, at most the staleness bound old.
    ///
    /// Errors: [`Error::Database`], [`Error::Corrupt`] (a held seat outside the
    /// section's range), wrapped in [`Error::Shared`].
    pub async fn snapshot(
        &self,
        event: EventId,
        section: &SectionInfo,
    ) -> Result<SharedSnapshot, Error> {
        let key = (event, section.section_id());
        let mut attempt = 0;
        loop {
            attempt += 1;
            let entry = self
                .availability
                .entry(key)
                .or_try_insert_with(self.load_snapshot(event, &section.layout))
                .await
                .map_err(Error::Shared)?;
            let fresh = entry.is_fresh();
            let snapshot = entry.into_value();
            // moka's clock may lag ours by a tick; never serve past the bound, unless the
            // bound is shorter than a read itself takes (then the newest read is served).
            if snapshot.loaded_at.elapsed() > self.staleness && attempt < 3 {
                self.availability.invalidate(&key).await;
                continue;
            }
            self.metrics.cache_lookup(!fresh);
            return Ok(snapshot);
        }
    }

    async fn load_snapshot(
        &self,
        event: EventId,
        layout: &SectionLayout,
    ) -> Result<SharedSnapshot, Error> {
        let loaded_at = Instant::now();
        self.metrics
            .availability_load(event.get(), layout.section_id());
        let section = i64::try_from(layout.section_id())
            .map_err(|_| Error::SectionNotFound(layout.section_id()))?;
        let mut conn = self
            .shards
            .for_section(event.get(), section)
            .await?
            .acquire()
            .await?;
        let (as_of, taken) = store::load_unavailable(&mut conn, event, layout.section_id()).await?;
        let availability = Availability::from_unavailable(
            layout.first_seat_id(),
            layout.seat_count(),
            taken.into_iter().map(|id| id.unsigned_abs()),
        )
        .map_err(|e| Error::Corrupt(format!("section {}: {e}", layout.section_id())))?;
        Ok(Arc::new(Snapshot {
            availability,
            as_of,
            loaded_at,
        }))
    }

    /// Availability of one section (`Some`) or of every section of the event, in plan
    /// order.
    ///
    /// Errors: as [`Self::layout`] and [`Self::snapshot`]; [`Error::SectionNotFound`].
    #[instrument(skip_all, fields(event_id = event.get(), section_id))]
    pub async fn availability(
        &self,
        event: EventId,
        section: Option<u64>,
    ) -> Result<(Arc<EventLayout>, SectionSnapshots), Error> {
        let layout = self.layout(event).await?;
        let sections: Vec<&SectionInfo> = match section {
            Some(id) => vec![layout.section(id).ok_or(Error::SectionNotFound(id))?],
            None => layout.sections.iter().collect(),
        };
        let ids: Vec<u64> = sections.iter().map(|s| s.section_id()).collect();
        let snapshots = try_join_all(sections.into_iter().map(|s| self.snapshot(event, s))).await?;
        for snapshot in &snapshots {
            self.metrics.served_age(age_ms(snapshot));
        }
        Ok((layout.clone(), ids.into_iter().zip(snapshots).collect()))
    }

    /// Best available seats from the cached availability, passing over the seats this
    /// process suggested within the staleness bound while others fit (see
    /// [`crate::offered`]), so fans asking at once are offered different seats.
    ///
    /// Errors: [`Error::InvalidField`] for a quantity above the event's per-claim
    /// maximum, an unknown category or near seat; [`Error::SectionNotFound`]; as
    /// [`Self::availability`].
    #[instrument(skip_all, fields(event_id = event.get(), quantity = query.quantity))]
    pub async fn suggest(
        &self,
        event: EventId,
        query: &SuggestQuery,
    ) -> Result<SuggestAnswer, Error> {
        let layout = self.layout(event).await?;
        if query.quantity > layout.max_seats_per_claim {
            return Err(Error::invalid(
                "quantity",
                format!(
                    "must be between 1 and {} for this event",
                    layout.max_seats_per_claim
                ),
            ));
        }
        let sections: Vec<&SectionInfo> = match &query.scope {
            Scope::All => layout.sections.iter().collect(),
            Scope::Section(id) => vec![layout.section(*id).ok_or(Error::SectionNotFound(*id))?],
            Scope::Category(code) => {
                if !layout.categories.iter().any(|c| &c.code == code) {
                    return Err(Error::invalid(
                        "category_code",
                        format!("no category {code:?} in this event"),
                    ));
                }
                layout
                    .sections
                    .iter()
                    .filter(|s| s.categories.iter().any(|c| c == code))
                    .collect()
            }
        };
        let preference = match query.want {
            Want::BestView => Preference::BestView,
            Want::Point(point) => Preference::Point(point),
            Want::NearSeat(seat_id) => {
                let seat = layout
                    .section_of_seat(seat_id)
                    .and_then(|s| s.layout.seat(seat_id))
                    .ok_or_else(|| {
                        Error::invalid("near_seat_id", format!("no seat {seat_id} in this event"))
                    })?;
                Preference::Point(seat.position)
            }
        };
        let snapshots = try_join_all(sections.iter().map(|s| self.snapshot(event, s))).await?;
        let as_of = snapshots.iter().map(|s| s.as_of).min();
        let filtered: Vec<Availability> = sections
            .iter()
            .zip(&snapshots)
            .map(|(section, snapshot)| match &query.scope {
                Scope::Category(code) => only_category(section, &snapshot.availability, code),
                _ => snapshot.availability.clone(),
            })
            .collect();
        // Seats just offered to other fans are passed over while others fit.
        let mut passed_over = filtered.clone();
        let mut any_passed = false;
        for (section, availability) in sections.iter().zip(passed_over.iter_mut()) {
            any_passed |= self
                .offered
                .pass_over(event, section.section_id(), availability);
        }
        let suggest = |from: &[Availability]| {
            let pairs: Vec<(&SectionLayout, &Availability)> = sections
                .iter()
                .map(|s| &s.layout)
                .zip(from.iter())
                .collect();
            stadium_seating::suggest(&pairs, query.quantity, preference, query.limit)
                .map_err(|e| Error::invalid("quantity", e.to_string()))
        };
        let mut suggestions = suggest(&passed_over)?;
        if suggestions.is_empty() && any_passed {
            suggestions = suggest(&filtered)?;
        }
        for s in &suggestions {
            self.offered.mark(event, s.section_id, &s.seat_ids);
        }
        Ok(SuggestAnswer { suggestions, as_of })
    }
}

/// The snapshot's age in whole milliseconds.
pub fn age_ms(snapshot: &Snapshot) -> u64 {
    u64::try_from(snapshot.loaded_at.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn only_category(section: &SectionInfo, availability: &Availability, code: &str) -> Availability {
    let mut out = availability.clone();
    let first = section.layout.first_seat_id();
    for (offset, category) in section.categories.iter().enumerate() {
        if category != code {
            // In range by construction: categories has one entry per seat of the range.
            let _ = out.set(first + offset as u64, false);
        }
    }
    out
}
