//! The sweeper's one statement. It only tidies: claims already treat a lapsed hold as
//! free, so correctness never waits for it.

use sqlx::PgConnection;

use crate::error::Error;

/// Lapsed rows marked expired by one sweep in one section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// The event.
    pub event: i64,
    /// The section.
    pub section: i64,
    /// Seat rows marked expired.
    pub rows: u64,
}

/// Marks up to `batch` lapsed `held` rows `expired`; what it marked, per event and
/// section (in no particular order; empty when nothing had lapsed).
///
/// `SKIP LOCKED` makes sweepers (and claims busy with those rows) pass each other by
/// instead of queueing, so several sweepers at once do no harm; each call is meant to
/// be its own short transaction.
///
/// # Errors
/// [`Error::Database`].
pub async fn sweep_expired(conn: &mut PgConnection, batch: u32) -> Result<Vec<Swept>, Error> {
    let rows = sqlx::query!(
        "WITH swept AS ( \
             UPDATE holds.seat_holds SET status = 'expired', updated_at = now() \
             WHERE seat_hold_id IN ( \
                 SELECT seat_hold_id FROM holds.seat_holds \
                 WHERE status = 'held' AND expires_at <= now() \
                 ORDER BY expires_at LIMIT $1 \
                 FOR UPDATE SKIP LOCKED) \
             AND status = 'held' \
             RETURNING event_id, section_id) \
         SELECT event_id AS \"event_id!\", section_id AS \"section_id!\", \
                count(*) AS \"rows!\" \
         FROM swept GROUP BY event_id, section_id",
        i64::from(batch),
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| Swept {
            event: row.event_id,
            section: row.section_id,
            rows: u64::try_from(row.rows).unwrap_or(0),
        })
        .collect())
}
