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

/// Seats of an event in one shard's active claims (held unexpired, booked, blocked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Active {
    /// Seats in unexpired fan holds.
    pub held_seats: u64,
    /// Unexpired holds those seats belong to.
    pub holds: u64,
    /// Seats booked or blocked.
    pub taken: u64,
}

impl SeatCounts {
    /// These counts with the active claims of another shard added.
    pub fn add(&mut self, other: Active) {
        self.held_seats += other.held_seats;
        self.holds += other.holds;
        self.free_seats = self
            .free_seats
            .saturating_sub(other.held_seats)
            .saturating_sub(other.taken);
    }
}

/// `event_id`'s active claims in the database of `conn` (a shard: no catalog read).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn active(conn: &mut PgConnection, event_id: i64) -> Result<Active> {
    let (held, holds, taken): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'held' AND expires_at > now()), \
                count(DISTINCT hold_key) FILTER (WHERE status = 'held' AND expires_at > now()), \
                count(*) FILTER (WHERE status IN ('booked', 'blocked')) \
           FROM holds.seat_holds \
          WHERE event_id = $1 AND status IN ('held', 'booked', 'blocked')",
    )
    .bind(event_id)
    .fetch_one(conn)
    .await?;
    let unsigned = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(Active {
        held_seats: unsigned(held),
        holds: unsigned(holds),
        taken: unsigned(taken),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_shards_claims_are_added_and_taken_from_the_free_seats() {
        let mut counts = SeatCounts {
            seats: 100,
            free_seats: 90,
            held_seats: 6,
            holds: 2,
            max_seats_per_claim: 8,
            as_of: Utc::now(),
        };
        counts.add(Active {
            held_seats: 5,
            holds: 3,
            taken: 20,
        });
        assert_eq!(
            (counts.free_seats, counts.held_seats, counts.holds),
            (65, 11, 5)
        );
        counts.add(Active {
            held_seats: 0,
            holds: 0,
            taken: 1_000,
        });
        assert_eq!(counts.free_seats, 0);
    }
}
