//! What a `SEAT_TAKEN` answer says: which of the wanted seats are unavailable now, and
//! free seats of the section offered instead.
//!
//! The section's seats (ids, rows, labels, plan positions) are fixed once the event
//! exists, so the caller keeps them ([`section_seats`]); the section's unavailable seat
//! ids come with the refused claim itself (an index-only range of
//! `seat_holds_section_active_idx` read inside `holds.claim`).

use sqlx::{FromRow, PgConnection};

use crate::domain::alternatives::{self, SeatPlace, SectionSeat};
use crate::domain::{EventId, SeatId, SeatSet, SectionId};
use crate::error::Error;

/// One seat of a section as the venue fixes it.
#[derive(Debug, Clone, FromRow)]
pub struct SectionSeatRow {
    seat_id: i64,
    row_index: i32,
    seat_index: i32,
    row_label: String,
    seat_label: String,
    x: f64,
    y: f64,
}

/// Every seat of `section` of `event`, ascending by seat id.
///
/// # Errors
/// [`Error::Database`].
pub async fn section_seats(
    conn: &mut PgConnection,
    event: EventId,
    section: SectionId,
) -> Result<Vec<SectionSeatRow>, Error> {
    Ok(sqlx::query_as(
        "SELECT seat_id, row_index, seat_index, row_label, seat_label, x, y \
         FROM catalog.event_seats WHERE event_id = $1 AND section_id = $2 ORDER BY seat_id",
    )
    .bind(event.get())
    .bind(section.get())
    .fetch_all(&mut *conn)
    .await?)
}

/// The taken seats among `requested` and up to `requested.len()` free seats of
/// `section` offered instead, from the section's `seats` and its ascending
/// `unavailable` ids.
///
/// When none of `requested` is unavailable any more (the winner released in between),
/// all of them are named: the refusal happened, and a retry may now succeed.
///
/// # Errors
/// [`Error::CorruptRow`] for a non-positive seat id.
pub fn refusal(
    section: SectionId,
    requested: &SeatSet,
    seats: &[SectionSeatRow],
    unavailable: &[i64],
) -> Result<(Vec<SeatId>, Vec<SeatId>), Error> {
    let mut places = Vec::with_capacity(seats.len());
    let mut taken = Vec::new();
    for row in seats {
        let seat = SeatId::try_from(row.seat_id)
            .map_err(|_| Error::CorruptRow(format!("seat id {}", row.seat_id)))?;
        let is_unavailable = unavailable.binary_search(&row.seat_id).is_ok();
        if is_unavailable && requested.as_slice().binary_search(&seat).is_ok() {
            taken.push(seat);
        }
        places.push(SectionSeat {
            place: SeatPlace {
                seat,
                row: row.row_index,
                index: row.seat_index,
            },
            row_label: row.row_label.clone(),
            seat_label: row.seat_label.clone(),
            x: row.x,
            y: row.y,
            available: !is_unavailable,
        });
    }
    if taken.is_empty() {
        taken = requested.as_slice().to_vec();
    }
    taken.sort_unstable();
    Ok((taken, alternatives::offer(section, &places, requested)))
}
