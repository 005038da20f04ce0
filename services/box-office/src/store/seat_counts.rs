//! Counting an event's seats for the waiting room: free, held (in unexpired holds)
//! and the holds they belong to, as of the database's clock. Reads `holds.seat_holds`
//! read-only, through its partial index of active claims.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::error::Result;

/// One event's seat counts at the instant `as_of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatCounts {
    /// Seats of the event's venue.
    pub seats: u64,
    /// Seats neither held (unexpired), booked nor blocked.
    pub free_seats: u64,
    /// Seats in unexpired fan holds, blocks aside.
    pub held_seats: u64,
    /// Unexpired holds those seats belong to.
    pub holds: u64,
    /// The event's seats-per-claim limit.
    pub max_seats_per_claim: u32,
    /// When they were counted (the statement's `now()`).
    pub as_of: DateTime<Utc>,
}

/// Counts `event_id`'s seats now.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn count(conn: &mut PgConnection, event_id: i64) -> Result<SeatCounts> {
    // A held row past `expires_at` counts as free, as a claim treats it. An aggregate
    // without GROUP BY gives one row, so the counts and `now()` are never NULL; the
    // seats-per-claim subquery is NULL when the event does not exist.
    let row = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM catalog.seats s
                     JOIN catalog.events e ON e.venue_id = s.venue_id
                    WHERE e.event_id = $1) AS "seats!",
                  count(*) FILTER (WHERE h.status = 'held' AND h.expires_at > now())
                    AS "held_seats!",
                  count(DISTINCT h.hold_key) FILTER (WHERE h.status = 'held' AND h.expires_at > now())
                    AS "holds!",
                  count(*) FILTER (WHERE h.status IN ('booked', 'blocked')) AS "taken!",
                  now() AS "as_of!",
                  (SELECT e.max_seats_per_claim FROM catalog.events e WHERE e.event_id = $1)
                    AS "max_seats_per_claim?"
             FROM holds.seat_holds h
            WHERE h.event_id = $1 AND h.status IN ('held', 'booked', 'blocked')"#,
        event_id
    )
    .fetch_one(conn)
    .await?;
    let unsigned = |n: i64| u64::try_from(n).unwrap_or(0);
    let (seats, held) = (unsigned(row.seats), unsigned(row.held_seats));
    Ok(SeatCounts {
        seats,
        free_seats: seats
            .saturating_sub(held)
            .saturating_sub(unsigned(row.taken)),
        held_seats: held,
        holds: unsigned(row.holds),
        max_seats_per_claim: row
            .max_seats_per_claim
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(1),
        as_of: row.as_of,
    })
}
