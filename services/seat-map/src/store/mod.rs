//! SQL of the seat map. It reads only views other services publish:
//! `catalog.event_venues`, `catalog.event_sections`, `catalog.event_seats`,
//! `catalog.event_categories` (box office) and `holds.unavailable_seats` (holds).
//! Functions take `&mut PgConnection`; the caller owns the transaction.

use std::time::SystemTime;

use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use stadium_seating::{StoredSeat, StoredSection, sections_from_stored};
use tracing::instrument;

use crate::domain::{CategoryInfo, EventId, EventLayout, SectionInfo};
use crate::error::Error;

/// What an event's layout depends on that can change after import, as one opaque
/// string (seats per claim, the event's `updated_at`, and every category's name,
/// colour and price), or `None` when the event does not exist. One small indexed
/// read: cheap enough to repeat once per staleness bound.
///
/// Errors: [`Error::Database`].
#[instrument(skip_all, fields(event_id = event.get()))]
pub async fn layout_version(
    conn: &mut PgConnection,
    event: EventId,
) -> Result<Option<String>, Error> {
    // Never NULL: seats per claim and `updated_at` are NOT NULL columns (behind the
    // view), the categories' part is COALESCEd.
    Ok(sqlx::query_scalar!(
        r#"SELECT v.max_seats_per_claim::text || '/' || v.updated_at::text || '/' ||
                  coalesce((SELECT md5(string_agg(c.category_code || ':' || c.name || ':' || c.color
                                                  || ':' || coalesce(c.price_minor::text, '-')
                                                  || ':' || c.currency::text,
                                                  ',' ORDER BY c.category_code))
                            FROM catalog.event_categories c WHERE c.event_id = v.event_id), '')
                    AS "version!"
           FROM catalog.event_venues v WHERE v.event_id = $1"#,
        event.get()
    )
    .fetch_optional(&mut *conn)
    .await?)
}

/// Reads an event's layout, or `None` when the event does not exist. Run it inside a
/// REPEATABLE READ transaction so the four reads agree.
///
/// Errors: [`Error::Database`]; [`Error::Corrupt`] when a section's seats break the
/// layout rules (ids not contiguous, places repeated).
#[instrument(skip_all, fields(event_id = event.get()))]
pub async fn load_layout(
    conn: &mut PgConnection,
    event: EventId,
) -> Result<Option<EventLayout>, Error> {
    // The views' columns are NOT NULL columns of their tables (inner joins) or
    // COALESCEs of them; only a category's price may be NULL (not set yet).
    let head = sqlx::query!(
        r#"SELECT venue_id AS "venue_id!", venue_name AS "venue_name!",
                  max_seats_per_claim AS "max_seats_per_claim!", updated_at AS "updated_at!"
           FROM catalog.event_venues WHERE event_id = $1"#,
        event.get()
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some(head) = head else {
        return Ok(None);
    };
    let sections = sqlx::query!(
        r#"SELECT section_id AS "section_id!", code AS "code!", name AS "name!",
                  focus_x AS "focus_x!", focus_y AS "focus_y!"
           FROM catalog.event_sections
           WHERE event_id = $1 ORDER BY sort_order"#,
        event.get()
    )
    .fetch_all(&mut *conn)
    .await?;
    let seats = sqlx::query_as!(
        StoredSeat,
        r#"SELECT section_id AS "section_id!", seat_id AS "seat_id!", row_label AS "row_label!",
                  seat_label AS "seat_label!", row_index AS "row_index!",
                  seat_index AS "seat_index!", x AS "x!", y AS "y!",
                  category_code AS "category_code!"
           FROM catalog.event_seats WHERE event_id = $1 ORDER BY seat_id"#,
        event.get()
    )
    .fetch_all(&mut *conn)
    .await?;
    let categories = sqlx::query_as!(
        CategoryInfo,
        r#"SELECT category_code AS "code!", name AS "name!", color AS "color!",
                  price_minor AS "price_minor?", currency::text AS "currency!"
           FROM catalog.event_categories
           WHERE event_id = $1 ORDER BY sort_order"#,
        event.get()
    )
    .fetch_all(&mut *conn)
    .await?;

    let accessible = sqlx::query_scalar!(
        r#"SELECT s.seat_id AS "seat_id!"
           FROM catalog.seats s JOIN catalog.events e ON e.venue_id = s.venue_id
           WHERE e.event_id = $1 AND s.accessible ORDER BY s.seat_id"#,
        event.get()
    )
    .fetch_all(&mut *conn)
    .await?;

    // Seats come ordered by id, which is also the offset order `categories` needs.
    let stored = sections.iter().map(|section| StoredSection {
        section_id: section.section_id,
        focus_x: section.focus_x,
        focus_y: section.focus_y,
    });
    let layouts = sections_from_stored(stored, seats)
        .map_err(|e| Error::Corrupt(format!("event {}: {e}", event.get())))?;
    let out = sections
        .into_iter()
        .zip(layouts)
        .map(|(section, (layout, categories))| {
            let first = layout.first_seat_id();
            let end = first + u64::from(layout.seat_count());
            let accessible = accessible
                .iter()
                .filter_map(|&id| u64::try_from(id).ok())
                .filter(|id| (first..end).contains(id))
                .filter_map(|id| u32::try_from(id - first).ok())
                .collect();
            SectionInfo {
                code: section.code,
                name: section.name,
                layout,
                categories,
                accessible,
            }
        })
        .collect();
    let mut hash = Sha256::new();
    hash.update(format!(
        "{}|{}|",
        head.venue_id,
        head.updated_at.timestamp_micros()
    ));
    for c in &categories {
        hash.update(format!(
            "{}|{}|{}|{:?}|{}|",
            c.code, c.name, c.color, c.price_minor, c.currency
        ));
    }
    Ok(Some(EventLayout {
        event_id: event,
        venue_id: head.venue_id,
        venue_name: head.venue_name,
        sections: out,
        categories,
        max_seats_per_claim: u32::try_from(head.max_seats_per_claim).unwrap_or(1).max(1),
        version: hex::encode(&hash.finalize()[..12]),
    }))
}

/// The seats of one section that are not free right now (booked, blocked, or held and
/// unexpired, as `holds.unavailable_seats` defines it), with the database clock at the
/// read. One query.
///
/// Errors: [`Error::Database`].
#[instrument(skip_all, fields(event_id = event.get(), section_id))]
pub async fn load_unavailable(
    conn: &mut PgConnection,
    event: EventId,
    section_id: u64,
) -> Result<(SystemTime, Vec<i64>), Error> {
    let section = i64::try_from(section_id).map_err(|_| Error::SectionNotFound(section_id))?;
    // An aggregate without GROUP BY gives one row; `now()` and the COALESCE are never
    // NULL.
    let row = sqlx::query!(
        r#"SELECT now() AS "as_of!", COALESCE(array_agg(seat_id ORDER BY seat_id), '{}') AS "seats!"
           FROM holds.unavailable_seats WHERE event_id = $1 AND section_id = $2"#,
        event.get(),
        section
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((SystemTime::from(row.as_of), row.seats))
}
