//! The seat history's retention. Its rows are written by two triggers on
//! `holds.seat_holds`, in the transaction of each change (migration
//! `…_holds_seat_history.sql`); here they only leave, once older than the retention.

use std::time::Duration;

use sqlx::PgConnection;

use crate::error::Error;

/// Deletes up to `batch` seat-history rows recorded more than `keep` ago (by the
/// database clock) and returns how many it deleted. Each call is meant to be its own
/// short transaction; the BRIN index on `at` finds the old rows without reading the
/// young ones.
///
/// # Errors
/// [`Error::Database`].
pub async fn trim_seat_history(
    conn: &mut PgConnection,
    keep: Duration,
    batch: u32,
) -> Result<u64, Error> {
    let done = sqlx::query(
        "DELETE FROM holds.seat_history WHERE ctid IN ( \
             SELECT ctid FROM holds.seat_history \
             WHERE at < now() - make_interval(secs => $1) LIMIT $2)",
    )
    .bind(keep.as_secs_f64())
    .bind(i64::from(batch))
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}
