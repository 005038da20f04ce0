//! The box office's operations: each change runs in one transaction together with its
//! audit record; pushes to the waiting room and calls to holds and payments happen
//! outside any transaction.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use sqlx::{Acquire, PgPool};
use stadium_venues::{ImportError, SourceFormat};

use crate::clients::push::{PushKind, PushReport, Pusher};
use crate::domain::{Event, EventSettings, EventStatus, PriceCategory, Transition};
use crate::error::{Error, Result};
use crate::store::audit::{self, AuditEntry};
use crate::store::cancellations::{self, CancellationRecord, OrderCounts};
use crate::store::invariants::Violation;
use crate::store::reports::{Grouping, ReportLine, TimelineBucket};
use crate::store::seat_counts::{self, SeatCounts};
use crate::store::seat_history::{self, After, SeatChange};
use crate::store::section_load::{self, SectionTop};
use crate::store::shard_map::{self, SectionSeats};
use crate::store::venues::VenueSummary;
use crate::store::{cross_shard, events, invariants, reports, sales_claims, venues};

/// What an import stored or found.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The venue with its sections.
    pub venue: VenueSummary,
    /// True when the same file was imported before (nothing changed).
    pub already_imported: bool,
    /// Non-fatal findings of the parser.
    pub warnings: Vec<String>,
}

/// Which seat a seat-history read is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeatQuery {
    /// Every seat of the event (an export).
    All,
    /// A seat by id.
    Id(i64),
    /// A seat by section code, row label and seat label.
    Labels {
        /// Section code.
        section: String,
        /// Row label.
        row: String,
        /// Seat label.
        seat: String,
    },
}

/// A cancellation and where the event's orders stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancellation {
    /// As recorded.
    pub record: CancellationRecord,
    /// The orders, counted from payments now.
    pub counts: OrderCounts,
    /// The event's currency (of the sums).
    pub currency: String,
}

/// Statuses an event may be cancelled from: any but cancelled.
const CANCELLABLE: &[EventStatus] = &[
    EventStatus::Draft,
    EventStatus::Presale,
    EventStatus::OnSale,
    EventStatus::Paused,
    EventStatus::Closed,
];

/// The box office over its database and the waiting room.
#[derive(Debug, Clone)]
pub struct BoxOfficeService {
    /// The main database (`shards.main()`).
    pool: PgPool,
    /// The main database and the shards holding seats.
    shards: stadium_db::Shards,
    pusher: Pusher,
    grace: Duration,
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::Internal(format!("audit json: {e}")))
}

fn event_target(event_id: i64) -> String {
    format!("event:{event_id}")
}

impl BoxOfficeService {
    /// Operations over the main database of `shards` (and, for seats, every shard),
    /// pushing sale changes with `pusher`; the canary skips half-done bookings younger
    /// than `grace`.
    pub fn new(shards: stadium_db::Shards, pusher: Pusher, grace: Duration) -> Self {
        Self {
            pool: shards.main().clone(),
            shards,
            pusher,
            grace,
        }
    }

    /// The pool (for the canary task and tests).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Imports a seating plan as venue `name`, all or nothing, with its audit record.
    ///
    /// # Errors
    /// [`Error::InvalidField`] (`name`) or [`Error::PlanInvalid`] for a bad plan;
    /// [`Error::Database`].
    pub async fn import_venue(
        &self,
        actor: &str,
        name: &str,
        format: SourceFormat,
        content: &[u8],
    ) -> Result<Imported> {
        let mut tx = self.pool.begin().await?;
        let outcome = stadium_venues::import(&mut tx, name, format, content)
            .await
            .map_err(import_error)?;
        let venue = venues::get(&mut tx, outcome.venue_id).await?;
        if !outcome.already_imported {
            audit::record(
                &mut tx,
                AuditEntry {
                    actor,
                    action: "import_venue",
                    target: format!("venue:{}", venue.venue_id),
                    before: None,
                    after: Some(json!({
                        "name": venue.name,
                        "source_format": venue.source_format,
                        "source_digest": venue.source_digest,
                        "sections": venue.section_count,
                        "seats": venue.seat_count,
                    })),
                },
            )
            .await?;
        }
        tx.commit().await?;
        Ok(Imported {
            venue,
            already_imported: outcome.already_imported,
            warnings: outcome
                .warnings
                .iter()
                .map(|w| format!("{}: {}", w.place, w.message))
                .collect(),
        })
    }

    /// Up to `limit` venues after id `after`.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn list_venues(&self, after: i64, limit: i64) -> Result<Vec<VenueSummary>> {
        let mut conn = self.pool.acquire().await?;
        venues::list(&mut conn, after, limit).await
    }

    /// Venue `venue_id` with its sections.
    ///
    /// # Errors
    /// [`Error::VenueNotFound`]; [`Error::Database`].
    pub async fn get_venue(&self, venue_id: i64) -> Result<VenueSummary> {
        let mut conn = self.pool.acquire().await?;
        venues::get(&mut conn, venue_id).await
    }

    /// The category codes of venue `venue_id`'s seats.
    ///
    /// # Errors
    /// [`Error::VenueNotFound`]; [`Error::Database`].
    pub async fn venue_codes(&self, venue_id: i64) -> Result<Vec<String>> {
        let mut conn = self.pool.acquire().await?;
        if !events::venue_exists(&mut conn, venue_id).await? {
            return Err(Error::VenueNotFound(venue_id));
        }
        events::venue_category_codes(&mut conn, venue_id).await
    }

    /// Creates a draft event with its prices (already checked against the venue).
    ///
    /// # Errors
    /// [`Error::VenueNotFound`]; [`Error::Database`].
    pub async fn create_event(
        &self,
        actor: &str,
        venue_id: i64,
        settings: &EventSettings,
        categories: &[PriceCategory],
    ) -> Result<Event> {
        let mut tx = self.pool.begin().await?;
        if !events::venue_exists(&mut tx, venue_id).await? {
            return Err(Error::VenueNotFound(venue_id));
        }
        let event_id = events::insert(&mut tx, venue_id, settings).await?;
        events::replace_categories(&mut tx, event_id, categories).await?;
        let event = events::load(&mut tx, event_id, false).await?;
        audit::record(
            &mut tx,
            AuditEntry {
                actor,
                action: "create_event",
                target: event_target(event_id),
                before: None,
                after: Some(to_json(&event)?),
            },
        )
        .await?;
        tx.commit().await?;
        tracing::info!(event_id, venue_id, actor, "event created");
        Ok(event)
    }

    /// Event `event_id`.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Database`].
    pub async fn get_event(&self, event_id: i64) -> Result<Event> {
        let mut conn = self.pool.acquire().await?;
        events::load(&mut conn, event_id, false).await
    }

    /// Up to `limit` events after id `after`, of one venue or all.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn list_events(
        &self,
        venue_id: Option<i64>,
        after: i64,
        limit: i64,
    ) -> Result<Vec<Event>> {
        let mut conn = self.pool.acquire().await?;
        events::list(&mut conn, venue_id, after, limit).await
    }

    /// Replaces the prices of event `event_id` (already checked against its venue).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::EventClosed`]; [`Error::PricesMissing`] when
    /// a running sale would be left with unpriced seats; [`Error::Database`].
    pub async fn set_price_categories(
        &self,
        actor: &str,
        event_id: i64,
        categories: &[PriceCategory],
    ) -> Result<Event> {
        let mut tx = self.pool.begin().await?;
        let before = events::load(&mut tx, event_id, true).await?;
        if matches!(before.status, EventStatus::Closed | EventStatus::Cancelled) {
            return Err(Error::EventClosed(event_id));
        }
        events::replace_categories(&mut tx, event_id, categories).await?;
        if before.status != EventStatus::Draft {
            let missing = events::unpriced_categories(&mut tx, event_id).await?;
            if !missing.is_empty() {
                return Err(Error::PricesMissing(missing));
            }
        }
        let after = events::load(&mut tx, event_id, false).await?;
        audit::record(
            &mut tx,
            AuditEntry {
                actor,
                action: "set_price_categories",
                target: event_target(event_id),
                before: Some(to_json(&before.price_categories)?),
                after: Some(to_json(&after.price_categories)?),
            },
        )
        .await?;
        tx.commit().await?;
        Ok(after)
    }

    /// Applies a sale transition as a conditional update, then tells the waiting room.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::InvalidTransition`] when the event is not in
    /// a status the transition starts from; [`Error::PricesMissing`] when opening a
    /// sale or a presale with unpriced seats; [`Error::OnsaleTimePassed`] for a presale
    /// asked for once the on-sale time has come; [`Error::Database`].
    pub async fn transition(
        &self,
        actor: &str,
        event_id: i64,
        t: Transition,
    ) -> Result<(Event, PushReport)> {
        let mut tx = self.pool.begin().await?;
        let before = events::load(&mut tx, event_id, true).await?;
        if t == Transition::StartPresale
            && t.from().contains(&before.status)
            && before.settings.onsale_at <= chrono::Utc::now()
        {
            return Err(Error::OnsaleTimePassed(
                before.settings.onsale_at.to_rfc3339(),
            ));
        }
        if matches!(t, Transition::Open | Transition::StartPresale)
            && t.from().contains(&before.status)
        {
            let missing = events::unpriced_categories(&mut tx, event_id).await?;
            if !missing.is_empty() {
                return Err(Error::PricesMissing(missing));
            }
        }
        if events::set_status(&mut tx, event_id, t.from(), t.to()).await? == 0 {
            return Err(Error::InvalidTransition {
                from: before.status.as_str().to_owned(),
                to: t.to().as_str(),
            });
        }
        let after = events::load(&mut tx, event_id, false).await?;
        audit::record(
            &mut tx,
            AuditEntry {
                actor,
                action: t.action(),
                target: event_target(event_id),
                before: Some(json!({ "status": before.status })),
                after: Some(json!({ "status": after.status })),
            },
        )
        .await?;
        tx.commit().await?;
        tracing::info!(
            event_id,
            actor,
            from = before.status.as_str(),
            to = after.status.as_str(),
            "sale status changed"
        );
        let push = self.pusher.push(event_id, PushKind::Configure).await;
        Ok((after, push))
    }

    /// Records as on sale every presale whose general on-sale time has come, each with
    /// its audit record (actor `schedule`, action `open_sale`), in one transaction, then
    /// tells the waiting room of each (the presale queue closes); the events moved.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn open_due_presales(&self) -> Result<Vec<i64>> {
        let mut tx = self.pool.begin().await?;
        let opened = events::open_due_presales(&mut tx).await?;
        for &event_id in &opened {
            audit::record(
                &mut tx,
                AuditEntry {
                    actor: "schedule",
                    action: Transition::Open.action(),
                    target: event_target(event_id),
                    before: Some(json!({ "status": EventStatus::Presale })),
                    after: Some(json!({ "status": EventStatus::OnSale })),
                },
            )
            .await?;
        }
        tx.commit().await?;
        for &event_id in &opened {
            tracing::info!(event_id, "presale over: the general on-sale has begun");
            self.pusher.push(event_id, PushKind::Configure).await;
        }
        Ok(opened)
    }

    /// Cancels `event_id` (any status but cancelled → cancelled) and records the
    /// cancellation for the refund worker, with its audit record, in one transaction;
    /// then tells the waiting room. Cancelling again changes nothing (the first reason
    /// and rate stand); the last value says whether this call cancelled.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Database`].
    pub async fn cancel_event(
        &self,
        actor: &str,
        event_id: i64,
        reason: &str,
        refunds_per_second: u32,
    ) -> Result<(Event, Cancellation, PushReport, bool)> {
        let mut tx = self.pool.begin().await?;
        let before = events::load(&mut tx, event_id, true).await?;
        let newly = before.status != EventStatus::Cancelled;
        if newly {
            events::set_status(&mut tx, event_id, CANCELLABLE, EventStatus::Cancelled).await?;
            cancellations::insert(&mut tx, event_id, reason, actor, refunds_per_second).await?;
            // Nothing sold, nothing being paid: done at once, no worker needed.
            if cancellations::counts(&mut tx, &self.shards, event_id)
                .await?
                .is_done()
            {
                cancellations::finish(&mut tx, event_id).await?;
            }
            audit::record(
                &mut tx,
                AuditEntry {
                    actor,
                    action: "cancel_event",
                    target: event_target(event_id),
                    before: Some(json!({ "status": before.status })),
                    after: Some(json!({
                        "status": EventStatus::Cancelled,
                        "reason": reason,
                        "refunds_per_second": refunds_per_second,
                    })),
                },
            )
            .await?;
        }
        let after = events::load(&mut tx, event_id, false).await?;
        tx.commit().await?;
        if newly {
            tracing::warn!(
                event_id,
                actor,
                reason,
                from = before.status.as_str(),
                "event cancelled"
            );
        }
        let push = self.pusher.push(event_id, PushKind::Configure).await;
        let cancellation = self.cancellation(event_id).await?;
        Ok((after, cancellation, push, newly))
    }

    /// The cancellation of `event_id` with its orders counted now.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::NotCancelled`]; [`Error::Database`].
    pub async fn cancellation(&self, event_id: i64) -> Result<Cancellation> {
        let mut tx = self.pool.begin().await?;
        // One snapshot for the record and the counts.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        let event = events::load(&mut tx, event_id, false).await?;
        let record = cancellations::load(&mut tx, event_id)
            .await?
            .ok_or(Error::NotCancelled(event_id))?;
        let counts = cancellations::counts(&mut tx, &self.shards, event_id).await?;
        tx.commit().await?;
        Ok(Cancellation {
            record,
            counts,
            currency: event.settings.currency,
        })
    }

    /// Sets the admission rate (fans per minute) and, when `active_fan_cap` is given,
    /// the cap on active admitted fans (0 = none), then tells the waiting room: the
    /// rate alone, or with a cap the whole configuration.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Database`].
    pub async fn set_admission_rate(
        &self,
        actor: &str,
        event_id: i64,
        fans_per_minute: u32,
        active_fan_cap: Option<u32>,
    ) -> Result<(Event, PushReport)> {
        let mut tx = self.pool.begin().await?;
        let before = events::load(&mut tx, event_id, true).await?;
        events::set_admission(&mut tx, event_id, fans_per_minute, active_fan_cap).await?;
        let after = events::load(&mut tx, event_id, false).await?;
        let admission = |event: &Event| {
            json!({
                "admission_rate_per_min": event.settings.admission_rate_per_min,
                "active_fan_cap": event.settings.active_fan_cap,
            })
        };
        audit::record(
            &mut tx,
            AuditEntry {
                actor,
                action: "set_admission_rate",
                target: event_target(event_id),
                before: Some(admission(&before)),
                after: Some(admission(&after)),
            },
        )
        .await?;
        tx.commit().await?;
        let kind = match active_fan_cap {
            Some(_) => PushKind::Configure,
            None => PushKind::Rate,
        };
        let push = self.pusher.push(event_id, kind).await;
        Ok((after, push))
    }

    /// Records a change made through another service (blocks, comps, refunds), which
    /// committed there; the record follows it in its own transaction.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn record(&self, entry: AuditEntry<'_>) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin().await?;
        audit::record(&mut tx, entry).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The sales report of `event_id` and its total line.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Database`].
    pub async fn sales_report(
        &self,
        event_id: i64,
        grouping: Grouping,
    ) -> Result<(Event, Vec<ReportLine>, ReportLine)> {
        let mut tx = self.pool.begin().await?;
        // One snapshot for the rows and the total.
        sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        let event = events::load(&mut tx, event_id, false).await?;
        let mut lines = reports::seats(&mut tx, event_id, grouping).await?;
        let orders = sales_claims::orders(&mut tx, event_id).await?;
        let on_main = sales_claims::lines(&mut *tx, event_id, grouping, &orders).await?;
        sales_claims::merge(&mut lines, &on_main);
        tx.commit().await?;
        // With shards, each one's claims and the money of the holds on it.
        for (_, shard) in self.shards.others() {
            let claims = sales_claims::lines(shard, event_id, grouping, &orders).await?;
            sales_claims::merge(&mut lines, &claims);
        }
        let mut total = ReportLine {
            key: "total".to_owned(),
            ..ReportLine::default()
        };
        for line in &lines {
            total.add(line);
        }
        Ok((event, lines, total))
    }

    /// Sales of `event_id` per `bucket_ms` bucket.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Database`].
    pub async fn timeline(
        &self,
        event_id: i64,
        bucket_ms: i64,
    ) -> Result<(Event, Vec<TimelineBucket>)> {
        let mut conn = self.pool.acquire().await?;
        let event = events::load(&mut conn, event_id, false).await?;
        let buckets = reports::timeline(&mut conn, event_id, bucket_ms).await?;
        Ok((event, buckets))
    }

    /// Up to `limit` status changes of `event_id`'s seat (or every seat) after
    /// `after`, in seat then history order.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::SeatNotFound`]; [`Error::Database`].
    pub async fn seat_history(
        &self,
        event_id: i64,
        seat: &SeatQuery,
        after: After,
        limit: i64,
    ) -> Result<Vec<SeatChange>> {
        let mut conn = self.pool.acquire().await?;
        events::load(&mut conn, event_id, false).await?;
        let seat_id = match seat {
            SeatQuery::All => None,
            SeatQuery::Id(id) => {
                if !seat_history::seat_in_event(&mut conn, event_id, *id).await? {
                    return Err(Error::SeatNotFound {
                        field: "seat.seat_id",
                        seat: id.to_string(),
                    });
                }
                Some(*id)
            }
            SeatQuery::Labels { section, row, seat } => Some(
                seat_history::seat_by_labels(&mut conn, event_id, section, row, seat)
                    .await?
                    .ok_or_else(|| Error::SeatNotFound {
                        field: "seat.labels",
                        seat: format!("{section}/{row}/{seat}"),
                    })?,
            ),
        };
        let mut changes = seat_history::page(&mut conn, event_id, seat_id, after, limit).await?;
        drop(conn);
        // A seat's history is on the database of its section (it moves with the
        // section), so each shard's page continues the same order: merge, keep `limit`.
        if !self.shards.is_single() {
            for (_, shard) in self.shards.others() {
                let mut conn = shard.acquire().await?;
                changes
                    .extend(seat_history::page(&mut conn, event_id, seat_id, after, limit).await?);
            }
            changes.sort_by_key(|c| (c.seat_id, c.history_id));
            changes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        Ok(changes)
    }

    /// Each database (the main one first) with the sections of `event_id` on it.
    ///
    /// # Errors
    /// As [`shard_map::sections_by_shard`].
    pub async fn shards_of(&self, event_id: i64) -> Result<Vec<(String, Vec<SectionSeats>)>> {
        shard_map::sections_by_shard(&self.shards, event_id).await
    }

    /// The sections of `event_id` with claims in the last `window` or active seats,
    /// busiest first (see [`section_load::top_sections`]).
    ///
    /// # Errors
    /// As [`section_load::top_sections`].
    pub async fn top_sections(&self, event_id: i64, window: Duration) -> Result<Vec<SectionTop>> {
        section_load::top_sections(&self.shards, event_id, window).await
    }

    /// Each database's claims of `event_id` per second over the last 10 s, by shard
    /// name.
    ///
    /// # Errors
    /// As [`section_load::shard_loads`].
    pub async fn shard_loads(&self, event_id: i64) -> Result<BTreeMap<String, f64>> {
        section_load::shard_loads(&self.shards, event_id).await
    }

    /// Moves `section_id` of `event_id` to the database `to` for `actor`.
    ///
    /// # Errors
    /// As [`shard_map::move_section`].
    pub async fn move_section(
        &self,
        actor: &str,
        event_id: i64,
        section_id: i64,
        to: &str,
    ) -> Result<stadium_db::Moved> {
        shard_map::move_section(&self.shards, actor, event_id, section_id, to).await
    }

    /// Every invariant violation of `event_id`, read in one snapshot.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Database`].
    pub async fn check_invariants(&self, event_id: i64) -> Result<Vec<Violation>> {
        if !self.shards.is_single() {
            let mut conn = self.pool.acquire().await?;
            events::load(&mut conn, event_id, false).await?;
            drop(conn);
            return cross_shard::check(&self.shards, event_id, self.grace).await;
        }
        let mut tx = self.pool.begin().await?;
        sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        events::load(&mut tx, event_id, false).await?;
        let found = invariants::check(&mut tx, event_id, self.grace).await?;
        tx.commit().await?;
        Ok(found)
    }

    /// The ids of events whose sale runs (presale, on sale or paused).
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn live_events(&self) -> Result<Vec<i64>> {
        let mut conn = self.pool.acquire().await?;
        events::live_ids(&mut conn).await
    }

    /// `event_id`'s seats now: free, held, and the holds they are in.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn seat_counts(&self, event_id: i64) -> Result<SeatCounts> {
        let mut conn = self.pool.acquire().await?;
        let mut counts = seat_counts::count(&mut conn, event_id).await?;
        for (_, shard) in self.shards.others() {
            let mut conn = shard.acquire().await?;
            counts.add(seat_counts::active(&mut conn, event_id).await?);
        }
        Ok(counts)
    }
}

fn import_error(error: ImportError) -> Error {
    match error {
        ImportError::BadName => Error::invalid("name", "must be 1 to 200 characters"),
        ImportError::Syntax {
            line,
            column,
            message,
        } => Error::PlanInvalid {
            path: format!("line {line}, column {column}"),
            problem: message.clone(),
            message: format!("line {line}, column {column}: {message}"),
        },
        ImportError::Invalid { issues } => {
            let message = issues
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            let (path, problem) = issues
                .first()
                .map(|i| (i.place.clone(), i.problem.to_string()))
                .unwrap_or_default();
            Error::PlanInvalid {
                path,
                problem,
                message,
            }
        }
        ImportError::Database(e) => Error::Database(e),
        ImportError::SeatOrder => {
            Error::Internal("seat ids came out of order; nothing stored".into())
        }
    }
}
