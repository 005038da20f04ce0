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
/// unfinished, by the database clock. A pending payment comes back after `base`, never
/// later: a fan waits for its answer and its hold's payment window is running, so a
/// backoff step could outlast the window and turn a timely payment into a refund (the
/// window and `abandon_after` are both 60 s by default); it also comes back no later
/// than when it reaches `abandon_after`, so one the provider never charged is given up
/// then. Any other payment backs off: `base` × 2^visits, at most `max`.
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
                 now() + CASE WHEN status = 'pending' THEN $2::bigint
                              ELSE LEAST($2::bigint * (1::bigint << LEAST(reconcile_visits, 30)),
                                         $3::bigint)
                         END * interval '1 millisecond',
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
