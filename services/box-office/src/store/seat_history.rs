//! Reading the seat history that holds writes (`holds.seat_history`, one row per
//! status change of a seat, written by triggers in the change's own transaction).
//! Read-only, in pages along its one index `(event_id, seat_id, history_id)`.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::Result;

/// One status change of one seat.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SeatChange {
    /// The row's place in the history (the page token's second half).
    pub history_id: i64,
    /// The seat.
    pub seat_id: i64,
    /// Its section's code.
    pub section_code: String,
    /// Its row label.
    pub row_label: String,
    /// Its seat label.
    pub seat_label: String,
    /// What happened: `claimed`, `extended`, `payment_started`, `expired`, `released`,
    /// `booked`, `refunded`, `voided`, `blocked`, `comped`, `to_channel`,
    /// `from_channel`, `moved`.
    pub change: String,
    /// Who: a fan id, an admin `sub`, a service name or `system`.
    pub actor: String,
    /// The hold (for a booking, the order's idempotency key).
    pub hold_key: Uuid,
    /// `fan`, `block` or `comp`.
    pub kind: String,
    /// When it happened (an expiry: when the hold lapsed).
    pub at: DateTime<Utc>,
    /// When the hold lapses after the change, while the seat is held.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Where a page starts: after this seat and history row, in seat-id then history
/// order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct After {
    /// Seat id of the previous page's last row (0: from the start).
    pub seat_id: i64,
    /// History id of that row (0: from the start).
    pub history_id: i64,
}

/// Up to `limit` changes of `event_id`'s seat `seat` (every seat when `None`) after
/// `after`, in seat-id then history order (the order each seat's changes happened).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn page(
    conn: &mut PgConnection,
    event_id: i64,
    seat: Option<i64>,
    after: After,
    limit: i64,
) -> Result<Vec<SeatChange>> {
    // Both bounds are index conditions: one seat is the range [(seat, after), (seat, ∞)],
    // the whole event [(after), (∞, ∞)].
    let (lower, upper) = match seat {
        Some(id) => (
            if after.seat_id == id {
                after
            } else {
                After {
                    seat_id: id,
                    history_id: 0,
                }
            },
            id,
        ),
        None => (after, i64::MAX),
    };
    let rows = sqlx::query_as::<_, SeatChange>(
        "SELECT h.history_id, h.seat_id, sc.code AS section_code, s.row_label, s.seat_label, \
                h.change, h.actor, h.hold_key, h.kind, h.at, h.expires_at \
         FROM holds.seat_history h \
         JOIN catalog.seats s ON s.seat_id = h.seat_id \
         JOIN catalog.sections sc ON sc.section_id = s.section_id \
         WHERE h.event_id = $1 AND (h.seat_id, h.history_id) > ($2, $3) AND h.seat_id <= $4 \
         ORDER BY h.seat_id, h.history_id \
         LIMIT $5",
    )
    .bind(event_id)
    .bind(lower.seat_id)
    .bind(lower.history_id)
    .bind(upper)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows)
}

/// The id of `event_id`'s seat `section_code`/`row_label`/`seat_label`, or `None`.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn seat_by_labels(
    conn: &mut PgConnection,
    event_id: i64,
    section_code: &str,
    row_label: &str,
    seat_label: &str,
) -> Result<Option<i64>> {
    let id = sqlx::query_scalar(
        "SELECT s.seat_id FROM catalog.events e \
         JOIN catalog.sections sc ON sc.venue_id = e.venue_id AND sc.code = $2 \
         JOIN catalog.seats s ON s.section_id = sc.section_id \
                             AND s.row_label = $3 AND s.seat_label = $4 \
         WHERE e.event_id = $1",
    )
    .bind(event_id)
    .bind(section_code)
    .bind(row_label)
    .bind(seat_label)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(id)
}

/// Whether seat `seat_id` is a seat of `event_id`'s venue.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn seat_in_event(conn: &mut PgConnection, event_id: i64, seat_id: i64) -> Result<bool> {
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM catalog.events e \
         JOIN catalog.seats s ON s.venue_id = e.venue_id AND s.seat_id = $2 \
         WHERE e.event_id = $1",
    )
    .bind(event_id)
    .bind(seat_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(found.is_some())
}
