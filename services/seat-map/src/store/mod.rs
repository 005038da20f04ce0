//! SQL of the seat map. It reads only views other services publish:
//! `catalog.event_venues`, `catalog.event_sections`, `catalog.event_seats`,
//! `catalog.event_categories` (box office) and `holds.unavailable_seats` (holds).
//! Functions take `&mut PgConnection`; the caller owns the transaction.

use std::collections::HashMap;
use std::time::SystemTime;

use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use sqlx::types::chrono::{DateTime, Utc};
use stadium_seating::{Point, SeatPlace, SectionLayout};
use tracing::instrument;

use crate::domain::{CategoryInfo, EventId, EventLayout, SectionInfo};
use crate::error::Error;

type SeatRow = (i64, i64, String, String, i32, i32, f64, f64, String);

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
    let version: Option<Option<String>> = sqlx::query_scalar(
        "SELECT v.max_seats_per_claim::text || '/' || v.updated_at::text || '/' ||
                coalesce((SELECT md5(string_agg(c.category_code || ':' || c.name || ':' || c.color
                                                || ':' || coalesce(c.price_minor::text, '-')
                                                || ':' || c.currency::text,
                                                ',' ORDER BY c.category_code))
                          FROM catalog.event_categories c WHERE c.event_id = v.event_id), '')
         FROM catalog.event_venues v WHERE v.event_id = $1",
    )
    .bind(event.get())
    .fetch_optional(&mut *conn)
    .await?;
    Ok(version.flatten())
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
    let head: Option<(i64, String, i32, DateTime<Utc>)> = sqlx::query_as(
        "SELECT venue_id, venue_name, max_seats_per_claim, updated_at FROM catalog.event_venues WHERE event_id = $1",
    )
    .bind(event.get())
    .fetch_optional(&mut *conn)
    .await?;
    let Some((venue_id, venue_name, max_seats_per_claim, updated_at)) = head else {
        return Ok(None);
    };
    let sections: Vec<(i64, String, String, f64, f64)> = sqlx::query_as(
        "SELECT section_id, code, name, focus_x, focus_y FROM catalog.event_sections
         WHERE event_id = $1 ORDER BY sort_order",
    )
    .bind(event.get())
    .fetch_all(&mut *conn)
    .await?;
    let seats: Vec<SeatRow> = sqlx::query_as(
        "SELECT section_id, seat_id, row_label, seat_label, row_index, seat_index, x, y, category_code
         FROM catalog.event_seats WHERE event_id = $1 ORDER BY seat_id",
    )
    .bind(event.get())
    .fetch_all(&mut *conn)
    .await?;
    let categories: Vec<(String, String, String, Option<i64>, String)> = sqlx::query_as(
        "SELECT category_code, name, color, price_minor, currency::text FROM catalog.event_categories
         WHERE event_id = $1 ORDER BY sort_order",
    )
    .bind(event.get())
    .fetch_all(&mut *conn)
    .await?;

    let mut by_section: HashMap<i64, Vec<SeatRow>> = HashMap::new();
    for seat in seats {
        by_section.entry(seat.0).or_default().push(seat);
    }
    let corrupt = |what: String| Error::Corrupt(format!("event {}: {what}", event.get()));
    let mut out = Vec::with_capacity(sections.len());
    for (section_id, code, name, focus_x, focus_y) in sections {
        let rows = by_section.remove(&section_id).unwrap_or_default();
        let categories: Vec<String> = rows.iter().map(|r| r.8.clone()).collect();
        let places = rows
            .into_iter()
            .map(
                |(_, seat_id, row_label, seat_label, row_index, seat_index, x, y, _)| {
                    Ok(SeatPlace {
                        seat_id: u64::try_from(seat_id)
                            .map_err(|_| corrupt(format!("seat id {seat_id}")))?,
                        row_index: u32::try_from(row_index)
                            .map_err(|_| corrupt(format!("row index {row_index}")))?,
                        row_label,
                        seat_index: u32::try_from(seat_index)
                            .map_err(|_| corrupt(format!("seat index {seat_index}")))?,
                        seat_label,
                        position: Point { x, y },
                    })
                },
            )
            .collect::<Result<Vec<_>, Error>>()?;
        let section_id =
            u64::try_from(section_id).map_err(|_| corrupt(format!("section id {section_id}")))?;
        // Seats come ordered by id, which is also the offset order `categories` needs.
        let layout = SectionLayout::new(
            section_id,
            Point {
                x: focus_x,
                y: focus_y,
            },
            places,
        )
        .map_err(|e| corrupt(e.to_string()))?;
        out.push(SectionInfo {
            code,
            name,
            layout,
            categories,
        });
    }
    let categories: Vec<CategoryInfo> = categories
        .into_iter()
        .map(|(code, name, color, price_minor, currency)| CategoryInfo {
            code,
            name,
            color,
            price_minor,
            currency,
        })
        .collect();
    let mut hash = Sha256::new();
    hash.update(format!("{venue_id}|{}|", updated_at.timestamp_micros()));
    for c in &categories {
        hash.update(format!(
            "{}|{}|{}|{:?}|{}|",
            c.code, c.name, c.color, c.price_minor, c.currency
        ));
    }
    Ok(Some(EventLayout {
        event_id: event,
        venue_id,
        venue_name,
        sections: out,
        categories,
        max_seats_per_claim: u32::try_from(max_seats_per_claim).unwrap_or(1).max(1),
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
    let (as_of, seats): (DateTime<Utc>, Vec<i64>) = sqlx::query_as(
        "SELECT now(), COALESCE(array_agg(seat_id ORDER BY seat_id), '{}')
         FROM holds.unavailable_seats WHERE event_id = $1 AND section_id = $2",
    )
    .bind(event.get())
    .bind(section)
    .fetch_one(&mut *conn)
    .await?;
    Ok((SystemTime::from(as_of), seats))
}
