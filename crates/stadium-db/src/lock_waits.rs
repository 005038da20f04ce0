//! Claims queueing on each other's seats: a claim takes its seats' advisory locks in
//! the two-key form (hashint8 of the event, hashint8 of the seat; migration
//! `20261202020000`) until it commits, so a claim that waits for a seat another claim
//! in flight holds is an ungranted advisory lock in `pg_locks` (PostgreSQL docs,
//! "pg_locks": the two keys are `classid` and `objid`, `objsubid` 2). Read by the box
//! office (`TopSections`) and exported per section by holds.

use sqlx::PgPool;

use crate::Shards;

/// Claims of one section waiting now, on one database, for a seat's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockWaits {
    /// The database (`main` or a shard's name).
    pub shard: String,
    /// The event.
    pub event_id: i64,
    /// The section.
    pub section_id: i64,
    /// Claims waiting.
    pub waiting: i64,
}

/// The claims waiting now for a seat's lock on every database of `shards`, by
/// database, event and section; of `event` only, when given. A seat is found by its
/// hash among its event's seats in the main database's catalog (two seats of an event
/// sharing a 32-bit hash would both count a waiter: rare, and a gauge only); the seats
/// are read only when some claim waits.
///
/// # Errors
/// The first database that does not answer.
pub async fn lock_waits(
    shards: &Shards,
    event: Option<i64>,
) -> Result<Vec<LockWaits>, sqlx::Error> {
    let (mut dbs, mut events, mut seats) = (Vec::new(), Vec::new(), Vec::new());
    for (name, pool) in shards.all() {
        for (event_key, seat_key) in waiting_keys(pool, event).await? {
            dbs.push(name.to_owned());
            events.push(event_key);
            seats.push(seat_key);
        }
    }
    if dbs.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
        "SELECT w.db, s.event_id, s.section_id, count(*)::bigint \
           FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS w(db, event_key, seat_key) \
           JOIN catalog.event_seats s \
             ON hashint8(s.event_id)::oid::bigint = w.event_key \
            AND hashint8(s.seat_id)::oid::bigint = w.seat_key \
          WHERE s.event_id IN (SELECT e.event_id FROM catalog.events e \
                                WHERE hashint8(e.event_id)::oid::bigint = ANY($2::bigint[])) \
          GROUP BY w.db, s.event_id, s.section_id \
          ORDER BY w.db, s.event_id, s.section_id",
    )
    .bind(&dbs)
    .bind(&events)
    .bind(&seats)
    .fetch_all(shards.main())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(shard, event_id, section_id, waiting)| LockWaits {
            shard,
            event_id,
            section_id,
            waiting,
        })
        .collect())
}

/// The (event, seat) keys of the ungranted two-key advisory locks on `pool`'s database.
async fn waiting_keys(pool: &PgPool, event: Option<i64>) -> Result<Vec<(i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT l.classid::bigint, l.objid::bigint FROM pg_locks l \
          WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 2 \
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
            AND ($1::bigint IS NULL OR l.classid = hashint8($1::bigint)::oid)",
    )
    .bind(event)
    .fetch_all(pool)
    .await
}
