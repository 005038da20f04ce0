//! The reconciler's schedule: which payments are due for a visit, and pushing a
//! visit back. Neither changes a payment's state or lease.

use std::time::Duration;

use sqlx::PgConnection;
use uuid::Uuid;

use super::payments::millis;
use crate::error::Error;

/// How long abandoned payments (failed, never seen charged) stay on the reconciler's
/// schedule after they were created.
pub const ABANDONED_WATCH: Duration = Duration::from_secs(24 * 3600);

/// The payments due for the reconciler (the scan): unfinished ones nobody holds a lease
/// on, and abandoned ones younger than `ABANDONED_WATCH` (a day), whose `reconcile_at` has
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
/// unfinished: `base` × 2^visits, at most `max`, by the database clock; but a pending
/// payment is visited again no later than when it reaches `abandon_after`, so one the
/// provider never charged is given up then, not a backoff step later (a fan who left
/// after an open Confirm waits for that answer).
///
/// # Errors
/// [`Error::Database`].
pub async fn postpone(
    conn: &mut PgConnection,
    id: Uuid,
    (base, max): (Duration, Duration),
    abandon_after: Duration,
) -> Result<(), Error> {
    // LEAST ignores the NULL of a payment that is not pending or already old enough.
    sqlx::query(
        "UPDATE payments.payments
         SET reconcile_at = LEAST(
                 now() + LEAST($2::bigint * (1::bigint << LEAST(reconcile_visits, 30)), $3::bigint)
                     * interval '1 millisecond',
                 CASE WHEN status = 'pending'
                           AND created_at + $4::bigint * interval '1 millisecond' > now()
                      THEN created_at + $4::bigint * interval '1 millisecond' END),
             reconcile_visits = reconcile_visits + 1
         WHERE payment_id = $1",
    )
    .bind(id)
    .bind(millis(base))
    .bind(millis(max))
    .bind(millis(abandon_after))
    .execute(&mut *conn)
    .await?;
    Ok(())
}
