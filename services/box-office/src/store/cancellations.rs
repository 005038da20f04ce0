//! Cancelled events (`catalog.event_cancellations`): the record, the lease of the replica
//! carrying the refunds out, and the progress counted from `payments` (read-only: the
//! refunds themselves go through the payments service).

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use stadium_db::Shards;
use uuid::Uuid;

use crate::error::Result;

/// How long a replica keeps a cancellation's work before another may take it over.
pub const LEASE_MS: i64 = 30_000;

/// A cancellation as recorded.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CancellationRecord {
    /// The event.
    pub event_id: i64,
    /// Why, 1 to 500 characters.
    pub reason: String,
    /// The admin token's `sub` of who cancelled.
    pub requested_by: String,
    /// When.
    pub requested_at: DateTime<Utc>,
    /// Refunds started per second at most.
    pub refunds_per_second: i32,
    /// Once nothing was left to refund or void.
    pub finished_at: Option<DateTime<Utc>>,
    /// The last failure the worker met.
    pub last_error: Option<String>,
    /// When it met it.
    pub last_error_at: Option<DateTime<Utc>>,
}

/// Where an event's orders stand: counted from `payments` in one statement, and the
/// holds being paid for on every database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct OrderCounts {
    /// Refunded with reason `event_cancelled`.
    pub refunded: i64,
    /// Their sum, minor units.
    pub refunded_minor: i64,
    /// Captured, not refunded yet.
    pub to_refund: i64,
    /// Their sum, minor units.
    pub to_refund_minor: i64,
    /// Refund decided, not finished (`refund_pending`).
    pub refunding: i64,
    /// Being charged (`pending`).
    pub pending: i64,
    /// Comps without a valid ticket.
    pub comps_voided: i64,
    /// Comps with a valid ticket.
    pub comps_to_void: i64,
    /// Valid tickets of the event.
    pub tickets_valid: i64,
    /// Holds in their payment window (a payment that started before the cancellation
    /// may still book them), on every database holding seats.
    #[sqlx(default)]
    pub holds_paying: i64,
}

impl OrderCounts {
    /// Whether nothing is left to refund, void or wait for.
    pub fn is_done(&self) -> bool {
        self.to_refund == 0
            && self.refunding == 0
            && self.pending == 0
            && self.comps_to_void == 0
            && self.tickets_valid == 0
            && self.holds_paying == 0
    }
}

/// Records the cancellation of `event_id` unless one is recorded; answers whether this
/// call recorded it.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn insert(
    conn: &mut PgConnection,
    event_id: i64,
    reason: &str,
    requested_by: &str,
    refunds_per_second: u32,
) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO catalog.event_cancellations (event_id, reason, requested_by, refunds_per_second)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (event_id) DO NOTHING",
    )
    .bind(event_id)
    .bind(reason)
    .bind(requested_by)
    .bind(i32::try_from(refunds_per_second).unwrap_or(i32::MAX))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The cancellation of `event_id`, if it was cancelled.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn load(conn: &mut PgConnection, event_id: i64) -> Result<Option<CancellationRecord>> {
    Ok(sqlx::query_as(
        "SELECT event_id, reason, requested_by, requested_at, refunds_per_second, finished_at,
                last_error, last_error_at
         FROM catalog.event_cancellations WHERE event_id = $1",
    )
    .bind(event_id)
    .fetch_optional(conn)
    .await?)
}

/// Where `event_id`'s orders stand now; `conn` is on the main database of `shards`.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn counts(
    conn: &mut PgConnection,
    shards: &Shards,
    event_id: i64,
) -> Result<OrderCounts> {
    let mut counts: OrderCounts = sqlx::query_as(
        "SELECT
            count(*) FILTER (WHERE p.status = 'refunded' AND p.refund_reason = 'event_cancelled')
                AS refunded,
            COALESCE(sum(p.refunded_minor) FILTER (
                WHERE p.status = 'refunded' AND p.refund_reason = 'event_cancelled'), 0)::bigint
                AS refunded_minor,
            count(*) FILTER (WHERE p.status = 'captured') AS to_refund,
            COALESCE(sum(p.amount_minor) FILTER (WHERE p.status = 'captured'), 0)::bigint
                AS to_refund_minor,
            count(*) FILTER (WHERE p.status = 'refund_pending') AS refunding,
            count(*) FILTER (WHERE p.status = 'pending') AS pending,
            count(*) FILTER (WHERE p.status = 'comp' AND NOT v.valid) AS comps_voided,
            count(*) FILTER (WHERE p.status = 'comp' AND v.valid) AS comps_to_void,
            (SELECT count(*) FROM payments.tickets t
              WHERE t.event_id = $1 AND t.status = 'valid') AS tickets_valid
         FROM payments.payments p
         CROSS JOIN LATERAL (
            SELECT EXISTS (SELECT 1 FROM payments.tickets t
                           WHERE t.payment_id = p.payment_id AND t.status = 'valid') AS valid
         ) v
         WHERE p.event_id = $1",
    )
    .bind(event_id)
    .fetch_one(&mut *conn)
    .await?;
    // Holds are on the database of their section's shard; the main one is read in the
    // caller's transaction, the others after it.
    counts.holds_paying = holds_paying(&mut *conn, event_id).await?;
    for (_, shard) in shards.others() {
        counts.holds_paying += holds_paying(shard, event_id).await?;
    }
    Ok(counts)
}

/// Holds of `event_id` in their payment window on `db`'s database.
async fn holds_paying<'e>(db: impl PgExecutor<'e>, event_id: i64) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(DISTINCT hold_key) FROM holds.seat_holds
          WHERE event_id = $1 AND status = 'held'
            AND payment_started_at IS NOT NULL AND expires_at > now()",
    )
    .bind(event_id)
    .fetch_one(db)
    .await?)
}

/// Takes the oldest unfinished cancellation whose lease is free for `owner`, for
/// [`LEASE_MS`]; `None` when there is none.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn take(conn: &mut PgConnection, owner: &str) -> Result<Option<CancellationRecord>> {
    Ok(sqlx::query_as(
        "UPDATE catalog.event_cancellations c
            SET lease_owner = $1, lease_until = now() + $2::bigint * interval '1 millisecond'
          WHERE c.event_id = (
                SELECT event_id FROM catalog.event_cancellations
                 WHERE finished_at IS NULL AND (lease_until IS NULL OR lease_until < now()
                                                OR lease_owner = $1)
                 ORDER BY requested_at
                 LIMIT 1
                 FOR UPDATE SKIP LOCKED)
         RETURNING c.event_id, c.reason, c.requested_by, c.requested_at, c.refunds_per_second,
                   c.finished_at, c.last_error, c.last_error_at",
    )
    .bind(owner)
    .bind(LEASE_MS)
    .fetch_optional(conn)
    .await?)
}

/// Extends `owner`'s lease of `event_id`'s cancellation; false when it lost the lease
/// (it lapsed and another replica took it).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn renew(conn: &mut PgConnection, event_id: i64, owner: &str) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE catalog.event_cancellations
            SET lease_until = now() + $3::bigint * interval '1 millisecond'
          WHERE event_id = $1 AND lease_owner = $2 AND finished_at IS NULL",
    )
    .bind(event_id)
    .bind(owner)
    .bind(LEASE_MS)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks `event_id`'s cancellation finished (the caller saw nothing left to do) and
/// clears its lease.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn finish(conn: &mut PgConnection, event_id: i64) -> Result<()> {
    sqlx::query(
        "UPDATE catalog.event_cancellations
            SET finished_at = now(), lease_owner = NULL, lease_until = NULL
          WHERE event_id = $1 AND finished_at IS NULL",
    )
    .bind(event_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Gives back every lease `owner` holds (a replica shutting down cleanly), so another
/// replica carries on at once instead of after [`LEASE_MS`].
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn release(conn: &mut PgConnection, owner: &str) -> Result<()> {
    sqlx::query(
        "UPDATE catalog.event_cancellations SET lease_owner = NULL, lease_until = NULL
          WHERE lease_owner = $1",
    )
    .bind(owner)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records the worker's last failure on `event_id` (cut to 1,000 characters).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn record_error(conn: &mut PgConnection, event_id: i64, error: &str) -> Result<()> {
    let cut: String = error.chars().take(1_000).collect();
    sqlx::query(
        "UPDATE catalog.event_cancellations SET last_error = $2, last_error_at = now()
          WHERE event_id = $1",
    )
    .bind(event_id)
    .bind(cut)
    .execute(conn)
    .await?;
    Ok(())
}

/// The next orders of `event_id` to refund or void, in order id order after `after`:
/// captured payments, refunds under way (payments finishes one nobody drives when
/// asked again) and comps with a valid ticket, at most `limit`.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn work(
    conn: &mut PgConnection,
    event_id: i64,
    after: Uuid,
    limit: i64,
) -> Result<Vec<Uuid>> {
    let rows: Vec<(Uuid,)> = sqlx::query_as(
        "SELECT p.payment_id FROM payments.payments p
          WHERE p.event_id = $1 AND p.payment_id > $2
            AND (p.status IN ('captured', 'refund_pending')
                 OR (p.status = 'comp' AND EXISTS (
                        SELECT 1 FROM payments.tickets t
                         WHERE t.payment_id = p.payment_id AND t.status = 'valid')))
          ORDER BY p.payment_id
          LIMIT $3",
    )
    .bind(event_id)
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}
