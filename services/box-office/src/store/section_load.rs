//! The SRE's view of an event's sections: the claims every holds replica counted per
//! section (`holds.section_load`, written by holds about once a second on the database
//! the claims ran on) summed over every database and a recent window, beside each
//! section's seats now (as [`shard_map::sections_by_shard`] counts them).

use std::collections::BTreeMap;
use std::time::Duration;

use sqlx::PgPool;
use stadium_db::{Shards, latency_quantile_ms};

use super::shard_map;
use crate::error::Result;

/// The window of a shard's load in `ListShards`.
pub const SHARD_LOAD_WINDOW: Duration = Duration::from_secs(10);

/// One section's claims over a window, summed over processes and databases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Counted {
    held: i64,
    seat_taken: i64,
    refused: i64,
    shed: i64,
    errors: i64,
    expired: i64,
    /// Counts per latency bucket (`stadium_db::CLAIM_LATENCY_BOUNDS_MS`).
    latency: Vec<i64>,
}

impl Counted {
    fn add(&mut self, more: &Counted) {
        self.held += more.held;
        self.seat_taken += more.seat_taken;
        self.refused += more.refused;
        self.shed += more.shed;
        self.errors += more.errors;
        self.expired += more.expired;
        if self.latency.len() < more.latency.len() {
            self.latency.resize(more.latency.len(), 0);
        }
        for (sum, n) in self.latency.iter_mut().zip(&more.latency) {
            *sum += n;
        }
    }
}

/// One section of an event: its load over the window and its seats now.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionTop {
    /// The section.
    pub section_id: i64,
    /// Its code.
    pub code: String,
    /// The database it is routed to (`main` or a shard's name).
    pub shard: String,
    /// Claims answered (held or refused, `SEAT_TAKEN` included) per second.
    pub claims_per_s: f64,
    /// The share of those refused `SEAT_TAKEN`, 0..=1 (0 without claims).
    pub seat_taken_rate: f64,
    /// The 99th percentile of claim latency, in ms (the upper bound of its bucket; 0
    /// without claims).
    pub p99_ms: f64,
    /// Seat rows marked expired (by claims on their way or the sweeper), per second.
    pub expiries_per_s: f64,
    /// Claims that created a hold in the window.
    pub held_claims: i64,
    /// Claims refused `SEAT_TAKEN` in the window.
    pub seat_taken_claims: i64,
    /// Claims refused for another reason (limits, sale state, tokens) in the window.
    pub refused_claims: i64,
    /// Claims the claims gate shed in the window (`OVERLOADED`: no turn at the database
    /// within the claim wait; nothing written, the fan retries). Not counted in
    /// `claims_per_s` or the `SEAT_TAKEN` rate.
    pub shed_claims: i64,
    /// Claims that failed (database, contention) in the window.
    pub failed_claims: i64,
    /// Seat rows marked expired (claims or the sweeper) in the window.
    pub expiries: i64,
    /// Seats held and not lapsed now.
    pub held: i64,
    /// Seats booked now (comps included).
    pub sold: i64,
    /// Seats neither held, booked nor blocked now.
    pub free: i64,
    /// Claims waiting now for a seat of the section that another claim in flight has
    /// locked (see [`lock_waits`]).
    pub lock_waits: i64,
}

/// The sections of `event_id` with claims in the last `window` or active seats, the
/// busiest (claims per second) first, then by code.
///
/// # Errors
/// [`crate::error::Error::EventNotFound`]; [`crate::error::Error::Database`] (any
/// database that does not answer).
pub async fn top_sections(
    shards: &Shards,
    event_id: i64,
    window: Duration,
) -> Result<Vec<SectionTop>> {
    let by_shard = shard_map::sections_by_shard(shards, event_id).await?;
    let seats: BTreeMap<i64, i64> = sqlx::query_as::<_, (i64, i64)>(
        "SELECT section_id, count(*) FROM catalog.event_seats WHERE event_id = $1 \
         GROUP BY section_id",
    )
    .bind(event_id)
    .fetch_all(shards.main())
    .await?
    .into_iter()
    .collect();
    let mut waiting = lock_waits(shards, event_id).await?;
    let mut counted: BTreeMap<i64, Counted> = BTreeMap::new();
    for (_, pool) in shards.all() {
        for (section, counts) in counted_on(pool, event_id, window).await? {
            counted.entry(section).or_default().add(&counts);
        }
    }
    let per_s = |n: i64| n as f64 / window.as_secs_f64();
    let mut top: Vec<SectionTop> = by_shard
        .into_iter()
        .flat_map(|(shard, sections)| sections.into_iter().map(move |s| (shard.clone(), s)))
        .filter_map(|(shard, s)| {
            let c = counted.remove(&s.section_id).unwrap_or_default();
            let claims = c.held + c.seat_taken + c.refused;
            let active = s.held + s.sold + s.blocked;
            let lock_waits = waiting.remove(&s.section_id).unwrap_or(0);
            if claims + c.shed + c.errors + c.expired + lock_waits == 0 && active == 0 {
                return None;
            }
            Some(SectionTop {
                section_id: s.section_id,
                shard,
                claims_per_s: per_s(claims),
                seat_taken_rate: if claims == 0 {
                    0.0
                } else {
                    c.seat_taken as f64 / claims as f64
                },
                p99_ms: latency_quantile_ms(&c.latency, 0.99).unwrap_or(0.0),
                expiries_per_s: per_s(c.expired),
                held_claims: c.held,
                seat_taken_claims: c.seat_taken,
                refused_claims: c.refused,
                shed_claims: c.shed,
                failed_claims: c.errors,
                expiries: c.expired,
                held: s.held,
                sold: s.sold,
                free: (seats.get(&s.section_id).copied().unwrap_or(0) - active).max(0),
                lock_waits,
                code: s.code,
            })
        })
        .collect();
    top.sort_by(|a, b| {
        b.claims_per_s
            .total_cmp(&a.claims_per_s)
            .then_with(|| a.code.cmp(&b.code))
    });
    Ok(top)
}

/// Claims of `event_id` waiting now, on every database of `shards`, for a seat's lock
/// that another claim in flight holds, by section (see [`stadium_db::lock_waits`]).
///
/// # Errors
/// [`crate::error::Error::Database`].
async fn lock_waits(shards: &Shards, event_id: i64) -> Result<BTreeMap<i64, i64>> {
    let mut by_section = BTreeMap::new();
    for waits in stadium_db::lock_waits(shards, Some(event_id)).await? {
        *by_section.entry(waits.section_id).or_default() += waits.waiting;
    }
    Ok(by_section)
}

/// Claims of `event_id` answered on each database of `shards` (held or refused) per
/// second over the last [`SHARD_LOAD_WINDOW`], by shard name.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn shard_loads(shards: &Shards, event_id: i64) -> Result<BTreeMap<String, f64>> {
    let mut loads = BTreeMap::new();
    for (name, pool) in shards.all() {
        let claims: i64 = counted_on(pool, event_id, SHARD_LOAD_WINDOW)
            .await?
            .values()
            .map(|c| c.held + c.seat_taken + c.refused)
            .sum();
        loads.insert(
            name.to_owned(),
            claims as f64 / SHARD_LOAD_WINDOW.as_secs_f64(),
        );
    }
    Ok(loads)
}

/// The claims of `event_id` counted on `pool` in the last `window`, by section, summed
/// over the processes that wrote them.
async fn counted_on(
    pool: &PgPool,
    event_id: i64,
    window: Duration,
) -> Result<BTreeMap<i64, Counted>> {
    type Row = (i64, i64, i64, i64, i64, i64, i64, Vec<i64>);
    let rows: Vec<Row> = sqlx::query_as(
        "WITH w AS ( \
             SELECT * FROM holds.section_load \
              WHERE event_id = $1 AND at > now() - make_interval(secs => $2)), \
         sums AS ( \
             SELECT section_id, sum(held)::bigint AS held, sum(seat_taken)::bigint AS seat_taken, \
                    sum(refused)::bigint AS refused, sum(shed)::bigint AS shed, \
                    sum(errors)::bigint AS errors, \
                    sum(expired)::bigint AS expired \
               FROM w GROUP BY section_id), \
         buckets AS ( \
             SELECT w.section_id, b.i, sum(b.n)::bigint AS n \
               FROM w, unnest(w.latency_buckets) WITH ORDINALITY AS b(n, i) \
              GROUP BY w.section_id, b.i) \
         SELECT s.section_id, s.held, s.seat_taken, s.refused, s.shed, s.errors, s.expired, \
                coalesce((SELECT array_agg(k.n ORDER BY k.i) FROM buckets k \
                           WHERE k.section_id = s.section_id), '{}') \
           FROM sums s",
    )
    .bind(event_id)
    .bind(window.as_secs_f64())
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(section, held, seat_taken, refused, shed, errors, expired, latency)| {
                (
                    section,
                    Counted {
                        held,
                        seat_taken,
                        refused,
                        shed,
                        errors,
                        expired,
                        latency,
                    },
                )
            },
        )
        .collect())
}
