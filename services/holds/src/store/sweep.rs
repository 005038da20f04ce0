//! The sweeper's one statement. It only tidies: claims already treat a lapsed hold as
//! free, so correctness never waits for it.

use sqlx::PgConnection;

use crate::error::Error;

/// Marks up to `batch` lapsed `held` rows `expired` and returns how many it marked.
///
/// `SKIP LOCKED` makes sweepers (and claims busy with those rows) pass each other by
/// instead of queueing, so several sweepers at once do no harm; each call is meant to
/// be its own short transaction.
///
/// # Errors
/// [`Error::Database`].
pub async fn sweep_expired(conn: &mut PgConnection, batch: u32) -> Result<u64, Error> {
    let done = sqlx::query!(
        "UPDATE holds.seat_holds SET status = 'expired', updated_at = now() \
         WHERE seat_hold_id IN ( \
             SELECT seat_hold_id FROM holds.seat_holds \
             WHERE status = 'held' AND expires_at <= now() \
             ORDER BY expires_at LIMIT $1 \
             FOR UPDATE SKIP LOCKED) \
         AND status = 'held'",
        i64::from(batch),
    )
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}
