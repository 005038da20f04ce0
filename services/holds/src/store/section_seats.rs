//! The seats of a section as the venue fixes them (ids, rows, labels, plan positions),
//! read for a `SEAT_TAKEN` answer; they never change once the event exists, so the
//! caller keeps them. The section's unavailable seat ids come with the refused claim
//! itself (an index-only range of `seat_holds_section_active_idx` read inside
//! `holds.claim`), and `domain::refusal` puts the two together.

use sqlx::PgConnection;

use crate::domain::alternatives::{SeatPlace, SectionSeat};
use crate::domain::{EventId, SeatId, SectionId};
use crate::error::Error;

/// One seat of a section as the venue fixes it.
#[derive(Debug, Clone)]
struct SectionSeatRow {
    seat_id: i64,
    row_index: i32,
    seat_index: i32,
    row_label: String,
    seat_label: String,
    x: f64,
    y: f64,
}

/// Every seat of `section` of `event`, ascending by seat id (marked available: the
/// refusal sets each seat's state).
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`] for a non-positive seat id.
pub async fn section_seats(
    conn: &mut PgConnection,
    event: EventId,
    section: SectionId,
) -> Result<Vec<SectionSeat>, Error> {
    let rows = sqlx::query_as!(
        SectionSeatRow,
        r#"SELECT seat_id AS "seat_id!", row_index AS "row_index!", seat_index AS "seat_index!",
               row_label AS "row_label!", seat_label AS "seat_label!", x AS "x!", y AS "y!"
           FROM catalog.event_seats WHERE event_id = $1 AND section_id = $2 ORDER BY seat_id"#,
        event.get(),
        section.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    rows.into_iter()
        .map(|row| {
            let seat = SeatId::try_from(row.seat_id)
                .map_err(|_| Error::CorruptRow(format!("seat id {}", row.seat_id)))?;
            Ok(SectionSeat {
                place: SeatPlace {
                    seat,
                    row: row.row_index,
                    index: row.seat_index,
                },
                row_label: row.row_label,
                seat_label: row.seat_label,
                x: row.x,
                y: row.y,
                available: true,
            })
        })
        .collect()
}
