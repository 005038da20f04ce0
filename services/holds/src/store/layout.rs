//! What best available reads about an event: its sections (focus point, seats with rows,
//! plan positions and categories) and its per-claim limit, read once per event and kept;
//! and how many seats of each section are unavailable now.

use sqlx::PgConnection;
use stadium_seating::{StoredSeat, StoredSection, sections_from_stored};

use crate::domain::EventId;
use crate::domain::best::EventLayout;
use crate::error::Error;

/// The layout of `event` (three reads, kept by the caller), `None` when there is no
/// such event.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`] for a negative id or a section the
/// seating engine refuses (ids not one contiguous range, a repeated place).
pub async fn event_layout(
    conn: &mut PgConnection,
    event: EventId,
) -> Result<Option<EventLayout>, Error> {
    let limit = sqlx::query_scalar!(
        r#"SELECT max_seats_per_claim AS "max_seats_per_claim!"
           FROM catalog.event_settings WHERE event_id = $1"#,
        event.get(),
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(limit) = limit else {
        return Ok(None);
    };
    let sections = sqlx::query_as!(
        StoredSection,
        r#"SELECT section_id AS "section_id!", focus_x AS "focus_x!", focus_y AS "focus_y!"
           FROM catalog.event_sections WHERE event_id = $1 ORDER BY section_id"#,
        event.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    let seats = sqlx::query_as!(
        StoredSeat,
        r#"SELECT section_id AS "section_id!", seat_id AS "seat_id!", row_index AS "row_index!",
               seat_index AS "seat_index!", row_label AS "row_label!",
               seat_label AS "seat_label!", x AS "x!", y AS "y!",
               category_code AS "category_code!"
           FROM catalog.event_seats WHERE event_id = $1 ORDER BY seat_id"#,
        event.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    let laid_out = sections_from_stored(sections, seats)
        .map_err(|e| Error::CorruptRow(format!("event {event} layout: {e}")))?;
    EventLayout::new(u32::try_from(limit).unwrap_or(0), laid_out).map(Some)
}

/// The unavailable seats of `event` now (held and unexpired, booked, blocked), ascending.
///
/// # Errors
/// [`Error::Database`].
pub async fn unavailable_seat_ids(
    conn: &mut PgConnection,
    event: EventId,
) -> Result<Vec<i64>, Error> {
    let seats = sqlx::query_scalar!(
        r#"SELECT seat_id AS "seat_id!"
           FROM holds.unavailable_seats WHERE event_id = $1 ORDER BY seat_id"#,
        event.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(seats)
}
