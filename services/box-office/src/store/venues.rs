//! Venues as the box office shows them: counts per section and per category.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use stadium_venues::SourceFormat;

use crate::error::{Error, Result};

/// A venue with its counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VenueSummary {
    /// `catalog.venues.venue_id`.
    pub venue_id: i64,
    /// Display name.
    pub name: String,
    /// `pretix_json`, `csv_manifest`, `seatsio_json` or `generated`.
    pub source_format: String,
    /// SHA-256 of the imported file, hex.
    pub source_digest: String,
    /// When it was imported.
    pub created_at: DateTime<Utc>,
    /// Sections.
    pub section_count: u32,
    /// Seats.
    pub seat_count: u32,
    /// Per section, in plan order; empty unless asked for.
    pub sections: Vec<SectionCounts>,
}

/// One section with its counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SectionCounts {
    /// `catalog.sections.section_id`.
    pub section_id: i64,
    /// Code unique in the venue.
    pub code: String,
    /// Display name.
    pub name: String,
    /// Distinct rows.
    pub row_count: u32,
    /// Seats.
    pub seat_count: u32,
    /// Seats by category code.
    pub seats_by_category: BTreeMap<String, u32>,
}

struct VenueRow {
    venue_id: i64,
    name: String,
    source_format: SourceFormat,
    source_digest: String,
    created_at: DateTime<Utc>,
    section_count: i64,
    seat_count: i64,
}

fn count(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl From<VenueRow> for VenueSummary {
    fn from(r: VenueRow) -> Self {
        VenueSummary {
            venue_id: r.venue_id,
            name: r.name,
            source_format: r.source_format.as_str().to_owned(),
            source_digest: r.source_digest,
            created_at: r.created_at,
            section_count: count(r.section_count),
            seat_count: count(r.seat_count),
            sections: Vec::new(),
        }
    }
}

/// Up to `limit` venues with an id above `after`, by id, without sections.
///
/// # Errors
/// [`Error::Database`].
pub async fn list(conn: &mut PgConnection, after: i64, limit: i64) -> Result<Vec<VenueSummary>> {
    // count(*) of a scalar subquery is never NULL.
    let rows = sqlx::query_as!(
        VenueRow,
        r#"SELECT v.venue_id, v.name, v.source_format AS "source_format: SourceFormat",
                  v.source_digest, v.created_at,
                  (SELECT count(*) FROM catalog.sections sc WHERE sc.venue_id = v.venue_id)
                    AS "section_count!",
                  (SELECT count(*) FROM catalog.seats s WHERE s.venue_id = v.venue_id)
                    AS "seat_count!"
           FROM catalog.venues v
           WHERE v.venue_id > $1 ORDER BY v.venue_id LIMIT $2"#,
        after,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(VenueSummary::from).collect())
}

/// Venue `venue_id` with its sections.
///
/// # Errors
/// [`Error::VenueNotFound`]; [`Error::Database`].
pub async fn get(conn: &mut PgConnection, venue_id: i64) -> Result<VenueSummary> {
    // The first venue after `venue_id - 1` is this one, if it exists.
    let mut venue = list(conn, venue_id.saturating_sub(1), 1)
        .await?
        .into_iter()
        .find(|v| v.venue_id == venue_id)
        .ok_or(Error::VenueNotFound(venue_id))?;

    // Counts are never NULL; the join keeps NOT NULL columns.
    let lines = sqlx::query!(
        r#"SELECT sc.section_id, sc.code, sc.name,
                  (SELECT count(DISTINCT row_label) FROM catalog.seats r
                    WHERE r.section_id = sc.section_id) AS "row_count!",
                  s.category_code, count(*) AS "seats!"
           FROM catalog.sections sc JOIN catalog.seats s ON s.section_id = sc.section_id
           WHERE sc.venue_id = $1
           GROUP BY sc.section_id, sc.code, sc.name, sc.sort_order, s.category_code
           ORDER BY sc.sort_order, s.category_code"#,
        venue_id
    )
    .fetch_all(conn)
    .await?;
    for line in lines {
        let (section_id, seats) = (line.section_id, line.seats);
        if venue
            .sections
            .last()
            .is_none_or(|s| s.section_id != section_id)
        {
            venue.sections.push(SectionCounts {
                section_id,
                code: line.code,
                name: line.name,
                row_count: count(line.row_count),
                seat_count: 0,
                seats_by_category: BTreeMap::new(),
            });
        }
        if let Some(section) = venue.sections.last_mut() {
            section.seat_count += count(seats);
            section
                .seats_by_category
                .insert(line.category_code, count(seats));
        }
    }
    Ok(venue)
}
