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
