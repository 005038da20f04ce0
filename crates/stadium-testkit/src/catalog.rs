//! A catalog for tests, written straight into the `catalog` tables: a venue, sections
//! of generated seats on it, and events.

use sqlx::PgPool;

/// A venue named `Test arena`, with a source digest of its own (so tests' venues never
/// collide); its id.
///
/// # Panics
/// When the insert fails.
pub async fn venue(pool: &PgPool) -> i64 {
    let digest = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    sqlx::query_scalar(
        "INSERT INTO catalog.venues (name, source_format, source_digest) \
         VALUES ('Test arena', 'generated', $1) RETURNING venue_id",
    )
    .bind(digest)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// One section of a test venue: its id and seat ids, ascending (row-major).
#[derive(Debug, Clone)]
pub struct Section {
    /// The section's id.
    pub id: u64,
    /// Its seats' ids.
    pub seats: Vec<u64>,
}

/// Adds section `code` (its name too), `sort_order`-th of `venue`, of `rows` ×
/// `per_row` seats: category `std`, row and seat labels and indexes from 0, x = seat
/// index, y = row index (the focus at the origin: the front left).
///
/// # Panics
/// When an insert fails (e.g. `code` is taken on the venue).
pub async fn section(
    pool: &PgPool,
    venue: i64,
    code: &str,
    sort_order: i32,
    rows: i32,
    per_row: i32,
) -> Section {
    let section: i64 = sqlx::query_scalar(
        "INSERT INTO catalog.sections (venue_id, code, name, sort_order) \
         VALUES ($1, $2, $2, $3) RETURNING section_id",
    )
    .bind(venue)
    .bind(code)
    .bind(sort_order)
    .fetch_one(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO catalog.seats (venue_id, section_id, row_label, seat_label, row_index, \
             seat_index, x, y, category_code) \
         SELECT $1, $2, r::text, i::text, r, i, i, r, 'std' \
         FROM generate_series(0, $3 - 1) AS g1(r), generate_series(0, $4 - 1) AS g2(i) ORDER BY g1.r, g2.i",
    )
    .bind(venue)
    .bind(section)
    .bind(rows)
    .bind(per_row)
    .execute(pool)
    .await
    .unwrap();
    let seats: Vec<i64> = sqlx::query_scalar(
        "SELECT seat_id FROM catalog.seats WHERE section_id = $1 ORDER BY seat_id",
    )
    .bind(section)
    .fetch_all(pool)
    .await
    .unwrap();
    Section {
        id: section as u64,
        seats: seats.into_iter().map(|s| s as u64).collect(),
    }
}

/// The settings of an [`event`].
#[derive(Debug, Clone, Copy)]
pub struct EventSettings {
    /// `draft`, `on_sale`, `paused` or `closed` (default `on_sale`).
    pub status: &'static str,
    /// How long a hold lasts, in milliseconds (default 600,000: ten minutes).
    pub hold_ttl_ms: i32,
    /// Most seats one claim may take (default 8).
    pub max_seats_per_claim: i32,
    /// Most seats one fan may hold at once (default 8).
    pub max_seats_per_fan: i32,
}

impl Default for EventSettings {
    fn default() -> Self {
        Self {
            status: "on_sale",
            hold_ttl_ms: 600_000,
            max_seats_per_claim: 8,
            max_seats_per_fan: 8,
        }
    }
}

/// A new event `Test night` on `venue` with `settings`: it starts in 30 days, its sale
/// opened now, 600 fans are admitted a minute, prices are in EUR; its id.
///
/// # Panics
/// When the insert fails.
pub async fn event(pool: &PgPool, venue: i64, settings: EventSettings) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms, \
             max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, currency) \
         VALUES ($1, 'Test night', $2, now() + interval '30 days', now(), $3, $4, $5, 600, 'EUR') \
         RETURNING event_id",
    )
    .bind(venue)
    .bind(settings.status)
    .bind(settings.hold_ttl_ms)
    .bind(settings.max_seats_per_claim)
    .bind(settings.max_seats_per_fan)
    .fetch_one(pool)
    .await
    .unwrap()
}
