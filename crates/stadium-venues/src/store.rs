//! Storing a plan in the catalog: one transaction, idempotent by the file's digest.

use sha2::{Digest, Sha256};
use sqlx::{Acquire, PgConnection};
use tracing::instrument;

use crate::error::{ImportError, Issues, Problem};
use crate::plan::{ImportWarning, SourceFormat, VenuePlan};

// `catalog.venues.source_format` reads and binds as the enum.
stadium_db::text_enum!(SourceFormat);

/// What an import stored (or found already stored).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOutcome {
    /// The venue (`catalog.venues.venue_id`).
    pub venue_id: i64,
    /// Sections of the venue.
    pub sections: u32,
    /// Seats of the venue.
    pub seats: u32,
    /// Warnings from reading the plan (e.g. repeated `seat_guid`s).
    pub warnings: Vec<ImportWarning>,
    /// True when the same bytes had been imported before; nothing changed.
    pub already_imported: bool,
}

/// SHA-256 of the bytes, lower-case hex (`catalog.venues.source_digest`).
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Parses `bytes` in `format`; `name` names a CSV plan (pretix plans and seats.io charts
/// carry their own).
///
/// Errors: as [`crate::parse_pretix`], [`crate::parse_seatsio`] and [`crate::parse_csv`]; for
/// [`SourceFormat::Generated`] an issue at `format` (generated plans are made by
/// [`crate::generate_stadium`] and stored with [`store_plan`]).
pub fn parse(format: SourceFormat, name: &str, bytes: &[u8]) -> Result<VenuePlan, ImportError> {
    match format {
        SourceFormat::PretixJson => crate::parse_pretix(bytes),
        SourceFormat::CsvManifest => crate::parse_csv(name, bytes),
        SourceFormat::SeatsioJson => crate::parse_seatsio(bytes),
        SourceFormat::Generated => {
            let mut issues = Issues::default();
            issues.push(
                "format",
                Problem::WrongType {
                    expected: "pretix_json, csv_manifest or seatsio_json",
                },
            );
            Err(ImportError::Invalid { issues: issues.0 })
        }
    }
}

/// Parses and stores one file as venue `name`, all or nothing. The same bytes again
/// return the stored venue with `already_imported = true` and change nothing.
///
/// Runs in its own transaction (a savepoint when `conn` is already in one).
///
/// Errors: [`ImportError::BadName`], parse errors (see [`parse`]),
/// [`ImportError::Database`], [`ImportError::SeatOrder`]; nothing is stored on error.
#[instrument(skip_all, fields(name, format = format.as_str(), bytes = bytes.len()))]
pub async fn import(
    conn: &mut PgConnection,
    name: &str,
    format: SourceFormat,
    bytes: &[u8],
) -> Result<ImportOutcome, ImportError> {
    check_name(name)?;
    let plan = parse(format, name, bytes)?;
    store_plan(conn, name, format, &digest(bytes), &plan).await
}

fn check_name(name: &str) -> Result<(), ImportError> {
    if name.trim().is_empty() || name.chars().count() > 200 {
        return Err(ImportError::BadName);
    }
    Ok(())
}

/// Stores a parsed or generated plan as venue `name` under `digest` (64 lower-case hex
/// characters identifying the source), all or nothing; a digest already stored returns
/// that venue with `already_imported = true`.
///
/// Seats are inserted in section, row, seat order while holding a lock that makes
/// concurrent imports wait, so each section's seat ids are contiguous and ascending in
/// that order; this is verified before commit.
///
/// Errors: [`ImportError::BadName`], [`ImportError::Database`] (including a malformed
/// digest, refused by the table's CHECK), [`ImportError::SeatOrder`].
#[instrument(skip_all, fields(name, format = format.as_str(), seats = plan.seat_count()))]
pub async fn store_plan(
    conn: &mut PgConnection,
    name: &str,
    format: SourceFormat,
    digest: &str,
    plan: &VenuePlan,
) -> Result<ImportOutcome, ImportError> {
    check_name(name)?;
    let mut tx = conn.begin().await?;
    // Identity values come from one sequence shared by every session; holding this lock
    // (self-conflicting, readers unaffected) keeps another import from interleaving ids.
    sqlx::query!("LOCK TABLE catalog.seats IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let existing = sqlx::query_scalar!(
        "SELECT venue_id FROM catalog.venues WHERE source_digest = $1",
        digest
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(venue_id) = existing {
        // count(*) of a scalar subquery is never NULL.
        let counts = sqlx::query!(
            r#"SELECT (SELECT count(*) FROM catalog.sections WHERE venue_id = $1) AS "sections!",
                      (SELECT count(*) FROM catalog.seats WHERE venue_id = $1) AS "seats!""#,
            venue_id
        )
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        return Ok(ImportOutcome {
            venue_id,
            sections: counts.sections as u32,
            seats: counts.seats as u32,
            warnings: plan.warnings.clone(),
            already_imported: true,
        });
    }
    let venue_id = sqlx::query_scalar!(
        "INSERT INTO catalog.venues (name, source_format, source_digest) VALUES ($1, $2, $3) RETURNING venue_id",
        name.trim(),
        format as _,
        digest
    )
    .fetch_one(&mut *tx)
    .await?;

    let (codes, (names, colors)): (Vec<&str>, (Vec<&str>, Vec<&str>)) = plan
        .categories
        .iter()
        .map(|c| (c.code.as_str(), (c.name.as_str(), c.color.as_str())))
        .unzip();
    sqlx::query!(
        "INSERT INTO catalog.venue_categories (venue_id, category_code, name, color, sort_order)
         SELECT $1, code, name, color, (ord - 1)::int
         FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(code, name, color, ord)",
        venue_id,
        &codes as &[&str],
        &names as &[&str],
        &colors as &[&str]
    )
    .execute(&mut *tx)
    .await?;

    let mut section_ids = Vec::with_capacity(plan.sections.len());
    for (order, section) in plan.sections.iter().enumerate() {
        let id = sqlx::query_scalar!(
            "INSERT INTO catalog.sections (venue_id, code, name, sort_order, focus_x, focus_y)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING section_id",
            venue_id,
            &section.code,
            &section.name,
            order as i32,
            section.focus_x,
            section.focus_y
        )
        .fetch_one(&mut *tx)
        .await?;
        section_ids.push(id);
    }

    let total = plan.seat_count();
    let mut seat_section = Vec::with_capacity(total);
    let mut row_labels = Vec::with_capacity(total);
    let mut seat_labels = Vec::with_capacity(total);
    let mut row_indexes = Vec::with_capacity(total);
    let mut seat_indexes = Vec::with_capacity(total);
    let mut xs = Vec::with_capacity(total);
    let mut ys = Vec::with_capacity(total);
    let mut categories = Vec::with_capacity(total);
    let mut guids = Vec::with_capacity(total);
    for (section, id) in plan.sections.iter().zip(&section_ids) {
        for (r, row) in section.rows.iter().enumerate() {
            for seat in &row.seats {
                seat_section.push(*id);
                row_labels.push(row.label.as_str());
                seat_labels.push(seat.label.as_str());
                row_indexes.push(r as i32);
                seat_indexes.push(seat.seat_index as i32);
                xs.push(seat.x);
                ys.push(seat.y);
                categories.push(seat.category.as_str());
                guids.push(seat.source_guid.as_deref());
            }
        }
    }
    // ORDER BY ord: identity values follow the order rows are produced in.
    sqlx::query!(
        "INSERT INTO catalog.seats (venue_id, section_id, row_label, seat_label, row_index, seat_index,
                                    x, y, category_code, source_guid)
         SELECT $1, section_id, row_label, seat_label, row_index, seat_index, x, y, category, guid
         FROM unnest($2::bigint[], $3::text[], $4::text[], $5::int[], $6::int[], $7::float8[],
                     $8::float8[], $9::text[], $10::text[])
              WITH ORDINALITY AS t(section_id, row_label, seat_label, row_index, seat_index, x, y,
                                   category, guid, ord)
         ORDER BY ord",
        venue_id,
        &seat_section[..],
        &row_labels as &[&str],
        &seat_labels as &[&str],
        &row_indexes[..],
        &seat_indexes[..],
        &xs[..],
        &ys[..],
        &categories as &[&str],
        &guids as &[Option<&str>]
    )
    .execute(&mut *tx)
    .await?;

    mark_accessible(&mut tx, plan, &section_ids).await?;

    // count(*) is never NULL.
    let out_of_order = sqlx::query_scalar!(
        r#"SELECT count(*) AS "out_of_order!" FROM (
             SELECT s.seat_id - lag(s.seat_id) OVER (ORDER BY sc.sort_order, s.row_index, s.seat_index) AS step
             FROM catalog.seats s JOIN catalog.sections sc ON sc.section_id = s.section_id
             WHERE s.venue_id = $1) t
         WHERE step <> 1"#,
        venue_id
    )
    .fetch_one(&mut *tx)
    .await?;
    if out_of_order != 0 {
        return Err(ImportError::SeatOrder);
    }
    tx.commit().await?;
    tracing::info!(
        venue_id,
        sections = section_ids.len(),
        seats = total,
        warnings = plan.warnings.len(),
        "venue imported"
    );
    Ok(ImportOutcome {
        venue_id,
        sections: section_ids.len() as u32,
        seats: total as u32,
        warnings: plan.warnings.clone(),
        already_imported: false,
    })
}

/// Flags the plan's accessible seats, found by their place (section, row, seat label is
/// unique per section); a plan without any costs no statement.
async fn mark_accessible(
    conn: &mut PgConnection,
    plan: &VenuePlan,
    section_ids: &[i64],
) -> Result<(), ImportError> {
    let mut sections = Vec::new();
    let mut rows = Vec::new();
    let mut seats = Vec::new();
    for (section, id) in plan.sections.iter().zip(section_ids) {
        for row in &section.rows {
            for seat in row.seats.iter().filter(|s| s.accessible) {
                sections.push(*id);
                rows.push(row.label.as_str());
                seats.push(seat.label.as_str());
            }
        }
    }
    if sections.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE catalog.seats s SET accessible = true
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS t(section_id, row_label, seat_label)
         WHERE s.section_id = t.section_id AND s.row_label = t.row_label
           AND s.seat_label = t.seat_label",
    )
    .bind(&sections)
    .bind(&rows)
    .bind(&seats)
    .execute(conn)
    .await?;
    Ok(())
}
