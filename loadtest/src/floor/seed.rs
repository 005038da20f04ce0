//! The benchmark's database: a fresh one (or the one given), migrated, with a generated
//! venue laid out so that seat ids are arithmetic — block `b` of four adjacent seats is
//! seats `first_seat + 4b .. first_seat + 4b + 3` of section `first_section + b / blocks
//! per section` — which lets `pgbench` compute the same seat blocks the gRPC clients claim.

use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, Executor, PgConnection, PgPool};

use stadium_db::with_database;

use super::FloorResult;

/// Seats per claim, the "4-seat claims" of the benchmark.
pub const SEATS_PER_CLAIM: u64 = 4;

/// Price of every seat of the seeded event (its one category, `std`), in euro cents:
/// a claim fixes it on the hold, and a confirm charges it.
pub const SEAT_PRICE_MINOR: i64 = 5000;

/// Shape of the generated venue.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Sections of the venue.
    pub sections: u64,
    /// Rows per section.
    pub rows: u64,
    /// Seats per row (a multiple of [`SEATS_PER_CLAIM`], so no block spans two rows).
    pub seats_per_row: u64,
}

impl Shape {
    /// Blocks of four adjacent seats in one row.
    pub fn blocks_per_row(&self) -> u64 {
        self.seats_per_row / SEATS_PER_CLAIM
    }

    /// Blocks per section.
    pub fn blocks_per_section(&self) -> u64 {
        self.rows * self.blocks_per_row()
    }

    /// Blocks of the whole venue.
    pub fn blocks(&self) -> u64 {
        self.sections * self.blocks_per_section()
    }
}

/// The seeded venue and event.
#[derive(Debug, Clone)]
pub struct Seeded {
    /// The event's id.
    pub event: i64,
    /// Id of the venue's first section; the others follow without gaps.
    pub first_section: i64,
    /// Id of the venue's first seat; the others follow without gaps, section by
    /// section, row by row.
    pub first_seat: i64,
    /// The layout.
    pub shape: Shape,
}

impl Seeded {
    /// The id of section `index` (0-based) of the venue.
    pub fn section_id(&self, index: u64) -> u64 {
        self.first_section as u64 + index
    }

    /// Section id and the four seat ids of block `block`.
    pub fn block(&self, block: u64) -> (u64, Vec<u64>) {
        let section = self.section_id(block / self.shape.blocks_per_section());
        let first = self.first_seat as u64 + block * SEATS_PER_CLAIM;
        (section, (first..first + SEATS_PER_CLAIM).collect())
    }
}

/// Where the benchmark's data lives.
#[derive(Debug)]
pub struct Database {
    /// URL of the database (for the service and `pgbench`).
    pub url: String,
    /// A small pool for seeding and resets.
    pub pool: PgPool,
    /// Set when this run created the database (and may truncate and drop it).
    pub created: Option<(String, String)>,
}

/// Opens `database_url`, or creates a fresh database on `server_url` named `prefix`
/// plus a random suffix; migrates it.
pub async fn open(
    database_url: Option<&str>,
    server_url: &str,
    prefix: &str,
) -> FloorResult<Database> {
    let (url, created) = match database_url {
        Some(url) => (url.to_owned(), None),
        None => {
            let name = format!("{prefix}_{}", hex::encode(rand::random::<[u8; 6]>()));
            let mut admin = PgConnection::connect(server_url).await?;
            admin
                .execute(format!("CREATE DATABASE {name}").as_str())
                .await?;
            admin.close().await?;
            (
                with_database(server_url, &name),
                Some((server_url.to_owned(), name)),
            )
        }
    };
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&url)
        .await?;
    stadium_db::migrate(&pool).await?;
    Ok(Database { url, pool, created })
}

/// Closes the pool and drops the database if this run created it.
pub async fn close(db: Database, keep: bool) -> FloorResult<()> {
    db.pool.close().await;
    if let Some((server_url, name)) = db.created {
        if keep {
            eprintln!("kept database {name}");
        } else {
            let mut admin = PgConnection::connect(&server_url).await?;
            admin
                .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                .await?;
        }
    }
    Ok(())
}

/// Seeds a venue of `shape` and an on-sale event with an hour-long hold TTL, limits no
/// benchmark fan reaches and every seat at [`SEAT_PRICE_MINOR`]; checks that seat and
/// section ids came out contiguous.
pub async fn seed(pool: &PgPool, shape: Shape) -> FloorResult<Seeded> {
    if shape.seats_per_row == 0 || !shape.seats_per_row.is_multiple_of(SEATS_PER_CLAIM) {
        return Err(format!("--seats-per-row must be a multiple of {SEATS_PER_CLAIM}").into());
    }
    let digest = hex::encode(rand::random::<[u8; 32]>());
    let venue = sqlx::query_scalar!(
        "INSERT INTO catalog.venues (name, source_format, source_digest) \
         VALUES ('Claim benchmark arena', 'generated', $1) RETURNING venue_id",
        digest,
    )
    .fetch_one(pool)
    .await?;
    sqlx::query!(
        "INSERT INTO catalog.sections (venue_id, code, name, sort_order) \
         SELECT $1, 'S' || n, 'Section ' || n, n \
         FROM generate_series(0, $2::bigint - 1) AS n ORDER BY n",
        venue,
        shape.sections as i64,
    )
    .execute(pool)
    .await?;
    sqlx::query!(
        "INSERT INTO catalog.seats (venue_id, section_id, row_label, seat_label, row_index, \
             seat_index, x, y, category_code) \
         SELECT $1, sec.section_id, r::text, i::text, r, i, i, r, 'std' \
         FROM catalog.sections sec, generate_series(0, $2::bigint - 1) AS g1(r), \
              generate_series(0, $3::bigint - 1) AS g2(i) \
         WHERE sec.venue_id = $1 ORDER BY sec.section_id, g1.r, g2.i",
        venue,
        shape.rows as i64,
        shape.seats_per_row as i64,
    )
    .execute(pool)
    .await?;
    let extent = sqlx::query!(
        "SELECT min(section_id) AS first, max(section_id) - min(section_id) + 1 AS count \
         FROM catalog.sections WHERE venue_id = $1",
        venue,
    )
    .fetch_one(pool)
    .await?;
    let first_seat = sqlx::query_scalar!(
        "SELECT min(seat_id) FROM catalog.seats WHERE venue_id = $1",
        venue
    )
    .fetch_one(pool)
    .await?;
    let (Some(first_section), Some(sections), Some(first_seat)) =
        (extent.first, extent.count, first_seat)
    else {
        return Err("the seeded venue has no seats; use a fresh database".into());
    };
    // The arithmetic layout pgbench relies on: any seat off it would make the two sides
    // claim different seats.
    let off_layout = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM catalog.seats s
           WHERE s.venue_id = $1 AND s.seat_id <> $2::bigint
               + (s.section_id - $3::bigint) * $4::bigint * $5::bigint
               + s.row_index * $5::bigint + s.seat_index"#,
        venue,
        first_seat,
        first_section,
        shape.rows as i64,
        shape.seats_per_row as i64,
    )
    .fetch_one(pool)
    .await?;
    if sections != shape.sections as i64 || off_layout != 0 {
        return Err("seeded seat ids are not contiguous; use a fresh database".into());
    }
    let event = sqlx::query_scalar!(
        "INSERT INTO catalog.events (venue_id, name, status, starts_at, onsale_at, hold_ttl_ms, \
             max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, currency) \
         VALUES ($1, 'Claim benchmark', 'on_sale', now() + interval '30 days', now(), 3600000, \
             8, 1000, 600, 'EUR') \
         RETURNING event_id",
        venue,
    )
    .fetch_one(pool)
    .await?;
    sqlx::query!(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency) \
         VALUES ($1, 'std', 'Standard', $2, 'EUR')",
        event,
        SEAT_PRICE_MINOR,
    )
    .execute(pool)
    .await?;
    sqlx::query!("ANALYZE").execute(pool).await?;
    Ok(Seeded {
        event,
        first_section,
        first_seat,
        shape,
    })
}

/// Empties the holds and the payments (their tickets and provider notices) of the
/// benchmark: `TRUNCATE` in a database this run created, else a delete of the event's
/// rows; then `VACUUM ANALYZE`, so every phase starts alike.
pub async fn reset(db: &Database, event: i64) -> FloorResult<()> {
    if db.created.is_some() {
        sqlx::query!(
            "TRUNCATE holds.seat_holds, payments.provider_notices, payments.tickets, \
             payments.payments",
        )
        .execute(&db.pool)
        .await?;
    } else {
        sqlx::query!(
            "DELETE FROM payments.provider_notices WHERE payment_id IN \
             (SELECT payment_id FROM payments.payments WHERE event_id = $1)",
            event,
        )
        .execute(&db.pool)
        .await?;
        sqlx::query!("DELETE FROM payments.tickets WHERE event_id = $1", event)
            .execute(&db.pool)
            .await?;
        sqlx::query!("DELETE FROM payments.payments WHERE event_id = $1", event)
            .execute(&db.pool)
            .await?;
        sqlx::query!("DELETE FROM holds.seat_holds WHERE event_id = $1", event)
            .execute(&db.pool)
            .await?;
    }
    sqlx::query!("VACUUM ANALYZE holds.seat_holds, payments.tickets, payments.payments")
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Rows held in the event: four per successful claim, whoever made it (a check on
/// the clients' counts and on all-or-nothing claims).
pub async fn held_rows(pool: &PgPool, event: i64) -> FloorResult<i64> {
    Ok(sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM holds.seat_holds
           WHERE event_id = $1 AND status = 'held'"#,
        event,
    )
    .fetch_one(pool)
    .await?)
}
