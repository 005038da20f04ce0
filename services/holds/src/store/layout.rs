//! What best available reads about an event: its sections (focus point, seats with rows,
//! plan positions and categories) and its per-claim limit, read once per event and kept;
//! and how many seats of each section are unavailable now.

use std::collections::HashMap;

use sqlx::PgConnection;
use stadium_seating::{Point, SeatPlace, SectionLayout};

use crate::domain::EventId;
use crate::domain::best::EventLayout;
use crate::error::Error;

#[derive(Debug)]
struct SectionRow {
    section_id: i64,
    focus_x: f64,
    focus_y: f64,
}

#[derive(Debug)]
struct SeatRow {
    section_id: i64,
    seat_id: i64,
    row_index: i32,
    seat_index: i32,
    row_label: String,
    seat_label: String,
    x: f64,
    y: f64,
    category_code: String,
}

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
        SectionRow,
        r#"SELECT section_id AS "section_id!", focus_x AS "focus_x!", focus_y AS "focus_y!"
           FROM catalog.event_sections WHERE event_id = $1 ORDER BY section_id"#,
        event.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    let seats = sqlx::query_as!(
        SeatRow,
        r#"SELECT section_id AS "section_id!", seat_id AS "seat_id!", row_index AS "row_index!",
               seat_index AS "seat_index!", row_label AS "row_label!",
               seat_label AS "seat_label!", x AS "x!", y AS "y!",
               category_code AS "category_code!"
           FROM catalog.event_seats WHERE event_id = $1 ORDER BY seat_id"#,
        event.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    let corrupt = |what: String| Error::CorruptRow(format!("event {event} layout: {what}"));
    let mut by_section: HashMap<i64, Vec<SeatRow>> = HashMap::new();
    for seat in seats {
        by_section.entry(seat.section_id).or_default().push(seat);
    }
    let mut laid_out = Vec::with_capacity(sections.len());
    for row in sections {
        let seats = by_section.remove(&row.section_id).unwrap_or_default();
        let categories = seats.iter().map(|s| s.category_code.clone()).collect();
        let places = seats
            .into_iter()
            .map(|s| {
                Ok(SeatPlace {
                    seat_id: u64::try_from(s.seat_id)
                        .map_err(|_| corrupt(format!("seat id {}", s.seat_id)))?,
                    row_index: u32::try_from(s.row_index)
                        .map_err(|_| corrupt(format!("row index {}", s.row_index)))?,
                    row_label: s.row_label,
                    seat_index: u32::try_from(s.seat_index)
                        .map_err(|_| corrupt(format!("seat index {}", s.seat_index)))?,
                    seat_label: s.seat_label,
                    position: Point { x: s.x, y: s.y },
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let id = u64::try_from(row.section_id)
            .map_err(|_| corrupt(format!("section id {}", row.section_id)))?;
        let focus = Point {
            x: row.focus_x,
            y: row.focus_y,
        };
        let layout = SectionLayout::new(id, focus, places).map_err(|e| corrupt(e.to_string()))?;
        laid_out.push((layout, categories));
    }
    EventLayout::new(u32::try_from(limit).unwrap_or(0), laid_out).map(Some)
}

/// Unavailable seats per section of `event` now: (section id, count).
///
/// # Errors
/// [`Error::Database`].
pub async fn unavailable_counts(
    conn: &mut PgConnection,
    event: EventId,
) -> Result<Vec<(i64, i64)>, Error> {
    let rows = sqlx::query!(
        r#"SELECT section_id AS "section_id!", count(*) AS "unavailable!"
           FROM holds.unavailable_seats WHERE event_id = $1 GROUP BY section_id"#,
        event.get(),
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.section_id, row.unavailable))
        .collect())
}
