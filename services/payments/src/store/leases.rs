//! Leases on unfinished payments: who drives one, until when (database clock).

use std::time::Duration;

use sqlx::PgConnection;
use uuid::Uuid;

use super::payments::{PaymentRow, millis, one};
use crate::domain::{Payment, PaymentStatus, RefundReason};
use crate::error::Error;

/// A lease on an unfinished payment: who drives it, until when (database clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The lease holder's random token.
    pub owner: Uuid,
    /// How long the lease lasts from when it is taken.
    pub ttl: Duration,
}

impl Lease {
    /// A fresh lease token lasting `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            owner: Uuid::new_v4(),
            ttl,
        }
    }
}

/// Takes the lease on an unfinished payment if nobody holds an unexpired one; returns
/// the payment when taken.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn take_lease(
    conn: &mut PgConnection,
    id: Uuid,
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    one(sqlx::query_as!(
        PaymentRow,
        r#"UPDATE payments.payments
           SET lease_owner = $2, lease_until = now() + $3::bigint * interval '1 millisecond',
               attempts = attempts + 1
           WHERE payment_id = $1 AND status IN ('pending', 'refund_pending')
               AND (lease_until IS NULL OR lease_until <= now())
           RETURNING payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined"#,
        id,
        lease.owner,
        millis(lease.ttl),
    )
    .fetch_optional(&mut *conn)
    .await?)
}

/// Gives the lease back early (after a failure the caller cannot finish), so a retry or
/// the reconciler may take over at once. Only the holder's own lease is released.
///
/// # Errors
/// [`Error::Database`].
pub async fn release_lease(conn: &mut PgConnection, id: Uuid, lease: Lease) -> Result<(), Error> {
    sqlx::query!(
        "UPDATE payments.payments SET lease_until = NULL
         WHERE payment_id = $1 AND lease_owner = $2",
        id,
        lease.owner,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// How long abandoned payments (failed, never seen charged) stay on the reconciler's
/// schedule after they were created.
pub const ABANDONED_WATCH: Duration = Duration::from_secs(24 * 3600);

/// The payments due for the reconciler (the scan): unfinished ones nobody holds a lease
/// on, and abandoned ones younger than [`ABANDONED_WATCH`], whose `reconcile_at` has
/// come, earliest first.
///
/// # Errors
/// [`Error::Database`].
pub async fn due(conn: &mut PgConnection, limit: i64) -> Result<Vec<Uuid>, Error> {
    Ok(
        sqlx::query_file_scalar!("src/store/sql/due.sql", limit, millis(ABANDONED_WATCH))
            .fetch_all(&mut *conn)
            .await?,
    )
}

/// Pushes the payment's next reconciler visit back after a visit that left it
/// unfinished: `base` × 2^visits, at most `max`, by the database clock.
///
/// # Errors
/// [`Error::Database`].
pub async fn postpone(
    conn: &mut PgConnection,
    id: Uuid,
    base: Duration,
    max: Duration,
) -> Result<(), Error> {
    sqlx::query!(
        "UPDATE payments.payments
         SET reconcile_at = now()
                 + LEAST($2::bigint * (1::bigint << LEAST(reconcile_visits, 30)), $3::bigint)
                     * interval '1 millisecond',
             reconcile_visits = reconcile_visits + 1
         WHERE payment_id = $1",
        id,
        millis(base),
        millis(max),
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}
