//! Events and their price categories in `catalog`.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::domain::{Event, EventSettings, EventStatus, PriceCategory};
use crate::error::{Error, Result};

// `catalog.events.status` reads and binds as the enum.
stadium_db::text_enum!(EventStatus);

struct EventRow {
    event_id: i64,
    venue_id: i64,
    name: String,
    status: EventStatus,
    paused_from: Option<EventStatus>,
    presale_started_at: Option<DateTime<Utc>>,
    starts_at: DateTime<Utc>,
    onsale_at: DateTime<Utc>,
    hold_ttl_ms: i32,
    max_hold_lifetime_ms: Option<i32>,
    max_seats_per_claim: i32,
    max_seats_per_fan: i32,
    admission_rate_per_min: i32,
    active_fan_cap: i32,
    admission_ttl_ms: i32,
    admission_no_show_ms: i32,
    waiting_list_offer_ms: i32,
    currency: String,
    created_at: DateTime<Utc>,
}

fn unsigned(column: &str, value: i32) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::Internal(format!("{column} is negative: {value}")))
}

impl EventRow {
    fn into_event(self, price_categories: Vec<PriceCategory>) -> Result<Event> {
        Ok(Event {
            event_id: self.event_id,
            venue_id: self.venue_id,
            status: self.status,
            paused_from: self.paused_from,
            presale_started_at: self.presale_started_at,
            settings: EventSettings {
                name: self.name,
                starts_at: self.starts_at,
                onsale_at: self.onsale_at,
                hold_ttl_ms: unsigned("hold_ttl_ms", self.hold_ttl_ms)?,
                max_hold_lifetime_ms: self
                    .max_hold_lifetime_ms
                    .map(|ms| unsigned("max_hold_lifetime_ms", ms))
                    .transpose()?,
                max_seats_per_claim: unsigned("max_seats_per_claim", self.max_seats_per_claim)?,
                max_seats_per_fan: unsigned("max_seats_per_fan", self.max_seats_per_fan)?,
                admission_rate_per_min: unsigned(
                    "admission_rate_per_min",
                    self.admission_rate_per_min,
                )?,
                active_fan_cap: unsigned("active_fan_cap", self.active_fan_cap)?,
                admission_ttl_ms: unsigned("admission_ttl_ms", self.admission_ttl_ms)?,
                admission_no_show_ms: unsigned("admission_no_show_ms", self.admission_no_show_ms)?,
                waiting_list_offer_ms: unsigned(
                    "waiting_list_offer_ms",
                    self.waiting_list_offer_ms,
                )?,
                currency: self.currency,
            },
            price_categories,
            created_at: self.created_at,
        })
    }
}

struct CategoryRow {
    event_id: i64,
    category_code: String,
    name: String,
    price_minor: i64,
    currency: String,
}

impl From<CategoryRow> for PriceCategory {
    fn from(row: CategoryRow) -> Self {
        PriceCategory {
            code: row.category_code,
            name: row.name,
            price_minor: row.price_minor,
            currency: row.currency,
        }
    }
}

/// Whether venue `venue_id` exists.
///
/// # Errors
/// [`Error::Database`].
pub async fn venue_exists(conn: &mut PgConnection, venue_id: i64) -> Result<bool> {
    // EXISTS is never NULL.
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM catalog.venues WHERE venue_id = $1) AS "exists!""#,
        venue_id
    )
    .fetch_one(conn)
    .await?)
}

/// The category codes the seats of venue `venue_id` carry, sorted.
///
/// # Errors
/// [`Error::Database`].
pub async fn venue_category_codes(conn: &mut PgConnection, venue_id: i64) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        "SELECT DISTINCT category_code FROM catalog.seats WHERE venue_id = $1 ORDER BY 1",
        venue_id
    )
    .fetch_all(conn)
    .await?)
}

/// Inserts a draft event on `venue_id` and returns its id.
///
/// # Errors
/// [`Error::Database`] (a CHECK refusing a value the edge let through is a bug).
pub async fn insert(conn: &mut PgConnection, venue_id: i64, s: &EventSettings) -> Result<i64> {
    let signed = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    Ok(sqlx::query_scalar!(
        "INSERT INTO catalog.events (venue_id, name, starts_at, onsale_at, hold_ttl_ms,
             max_seats_per_claim, max_seats_per_fan, admission_rate_per_min, active_fan_cap,
             admission_ttl_ms, currency, max_hold_lifetime_ms, admission_no_show_ms,
             waiting_list_offer_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         RETURNING event_id",
        venue_id,
        &s.name,
        s.starts_at,
        s.onsale_at,
        signed(s.hold_ttl_ms),
        signed(s.max_seats_per_claim),
        signed(s.max_seats_per_fan),
        signed(s.admission_rate_per_min),
        signed(s.active_fan_cap),
        signed(s.admission_ttl_ms),
        &s.currency,
        s.max_hold_lifetime_ms.map(signed),
        signed(s.admission_no_show_ms),
        signed(s.waiting_list_offer_ms)
    )
    .fetch_one(conn)
    .await?)
}

/// Replaces the price categories of `event_id` with `categories`.
///
/// # Errors
/// [`Error::Database`].
pub async fn replace_categories(
    conn: &mut PgConnection,
    event_id: i64,
    categories: &[PriceCategory],
) -> Result<()> {
    sqlx::query!(
        "DELETE FROM catalog.price_categories WHERE event_id = $1",
        event_id
    )
    .execute(&mut *conn)
    .await?;
    let codes: Vec<&str> = categories.iter().map(|c| c.code.as_str()).collect();
    let names: Vec<&str> = categories.iter().map(|c| c.name.as_str()).collect();
    let prices: Vec<i64> = categories.iter().map(|c| c.price_minor).collect();
    let currencies: Vec<&str> = categories.iter().map(|c| c.currency.as_str()).collect();
    sqlx::query!(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency)
         SELECT $1, code, name, price, currency
         FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[]) AS t(code, name, price, currency)",
        event_id,
        &codes as &[&str],
        &names as &[&str],
        &prices[..],
        &currencies as &[&str]
    )
    .execute(conn)
    .await?;
    Ok(())
}

async fn categories_of(conn: &mut PgConnection, ids: &[i64]) -> Result<Vec<CategoryRow>> {
    // `currency` is a NOT NULL column.
    Ok(sqlx::query_as!(
        CategoryRow,
        r#"SELECT event_id, category_code, name, price_minor, currency::text AS "currency!"
           FROM catalog.price_categories WHERE event_id = ANY($1::bigint[])
           ORDER BY event_id, price_minor DESC, category_code"#,
        ids
    )
    .fetch_all(conn)
    .await?)
}

async fn assemble(conn: &mut PgConnection, rows: Vec<EventRow>) -> Result<Vec<Event>> {
    let ids: Vec<i64> = rows.iter().map(|r| r.event_id).collect();
    let mut categories = categories_of(conn, &ids).await?;
    rows.into_iter()
        .map(|row| {
            let (mine, rest): (Vec<_>, Vec<_>) = categories
                .drain(..)
                .partition(|c| c.event_id == row.event_id);
            categories = rest;
            row.into_event(mine.into_iter().map(PriceCategory::from).collect())
        })
        .collect()
}

/// Event `event_id` with its prices; with `lock`, its row stays locked (`FOR UPDATE`)
/// until the caller's transaction ends, so the change that follows starts from what
/// was read.
///
/// # Errors
/// [`Error::EventNotFound`]; [`Error::Database`].
pub async fn load(conn: &mut PgConnection, event_id: i64, lock: bool) -> Result<Event> {
    // `currency` is a NOT NULL column.
    let row = if lock {
        sqlx::query_as!(
            EventRow,
            r#"SELECT event_id, venue_id, name, status AS "status: EventStatus",
                      paused_from AS "paused_from: EventStatus", presale_started_at, starts_at,
                      onsale_at, hold_ttl_ms, max_hold_lifetime_ms, max_seats_per_claim,
                      max_seats_per_fan, admission_rate_per_min, active_fan_cap,
                      admission_ttl_ms, admission_no_show_ms, waiting_list_offer_ms,
                      currency::text AS "currency!",
                      created_at
               FROM catalog.events WHERE event_id = $1 FOR UPDATE"#,
            event_id
        )
        .fetch_optional(&mut *conn)
        .await?
    } else {
        sqlx::query_as!(
            EventRow,
            r#"SELECT event_id, venue_id, name, status AS "status: EventStatus",
                      paused_from AS "paused_from: EventStatus", presale_started_at, starts_at,
                      onsale_at, hold_ttl_ms, max_hold_lifetime_ms, max_seats_per_claim,
                      max_seats_per_fan, admission_rate_per_min, active_fan_cap,
                      admission_ttl_ms, admission_no_show_ms, waiting_list_offer_ms,
                      currency::text AS "currency!",
                      created_at
               FROM catalog.events WHERE event_id = $1"#,
            event_id
        )
        .fetch_optional(&mut *conn)
        .await?
    };
    let row = row.ok_or(Error::EventNotFound(event_id))?;
    let mut events = assemble(conn, vec![row]).await?;
    events.pop().ok_or(Error::EventNotFound(event_id))
}

/// Up to `limit` events with an id above `after`, of one venue or all, by id.
///
/// # Errors
/// [`Error::Database`].
pub async fn list(
    conn: &mut PgConnection,
    venue_id: Option<i64>,
    after: i64,
    limit: i64,
) -> Result<Vec<Event>> {
    // `currency` is a NOT NULL column.
    let rows = sqlx::query_as!(
        EventRow,
        r#"SELECT event_id, venue_id, name, status AS "status: EventStatus",
                      paused_from AS "paused_from: EventStatus", presale_started_at, starts_at,
                  onsale_at, hold_ttl_ms, max_hold_lifetime_ms, max_seats_per_claim,
                  max_seats_per_fan, admission_rate_per_min, active_fan_cap,
                  admission_ttl_ms, admission_no_show_ms, waiting_list_offer_ms,
                      currency::text AS "currency!",
                      created_at
           FROM catalog.events
           WHERE event_id > $1 AND ($2::bigint IS NULL OR venue_id = $2)
           ORDER BY event_id LIMIT $3"#,
        after,
        venue_id,
        limit
    )
    .fetch_all(&mut *conn)
    .await?;
    assemble(conn, rows).await
}

/// Events whose sale is running (presale, on sale or paused), by id: what the canary
/// watches and the resync sends.
///
/// # Errors
/// [`Error::Database`].
pub async fn live_ids(conn: &mut PgConnection) -> Result<Vec<i64>> {
    Ok(sqlx::query_scalar!(
        "SELECT event_id FROM catalog.events WHERE status IN ($1::text, $2::text, $3::text)
         ORDER BY event_id",
        EventStatus::Presale as _,
        EventStatus::OnSale as _,
        EventStatus::Paused as _
    )
    .fetch_all(conn)
    .await?)
}

/// Moves `event_id` to `to` only if its status is one of `from`; the number of rows
/// changed (0 or 1) says whether it did. Pausing records what was paused
/// (`paused_from`), and `to` on_sale from paused resumes that instead: a paused presale
/// resumes as a presale. Starting a presale records when (`presale_started_at`).
///
/// # Errors
/// [`Error::Database`].
pub async fn set_status(
    conn: &mut PgConnection,
    event_id: i64,
    from: &[EventStatus],
    to: EventStatus,
) -> Result<u64> {
    let from: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
    Ok(sqlx::query!(
        "UPDATE catalog.events
         SET status = CASE WHEN status = 'paused' AND $2 = 'on_sale'
                           THEN COALESCE(paused_from, 'on_sale') ELSE $2 END,
             paused_from = CASE WHEN $2 = 'paused' THEN status END,
             presale_started_at = CASE WHEN $2 = 'presale' THEN now()
                                       ELSE presale_started_at END,
             updated_at = now()
         WHERE event_id = $1 AND status = ANY($3::text[])",
        event_id,
        to as _,
        &from as &[&str]
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// Moves every presale whose general on-sale time has come to on sale (claims no
/// longer wait for this: holds reads the time itself); the events moved.
///
/// # Errors
/// [`Error::Database`].
pub async fn open_due_presales(conn: &mut PgConnection) -> Result<Vec<i64>> {
    Ok(sqlx::query_scalar!(
        "UPDATE catalog.events SET status = $1, updated_at = now()
         WHERE status = $2 AND onsale_at <= now()
         RETURNING event_id",
        EventStatus::OnSale as _,
        EventStatus::Presale as _
    )
    .fetch_all(conn)
    .await?)
}

/// Sets the admission rate of `event_id` (fans per minute) and, when `active_fan_cap`
/// is given, its cap on active admitted fans (0 = none); the rows changed.
///
/// # Errors
/// [`Error::Database`].
pub async fn set_admission(
    conn: &mut PgConnection,
    event_id: i64,
    fans_per_minute: u32,
    active_fan_cap: Option<u32>,
) -> Result<u64> {
    let signed = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    Ok(sqlx::query!(
        "UPDATE catalog.events
         SET admission_rate_per_min = $2, active_fan_cap = COALESCE($3, active_fan_cap),
             updated_at = now()
         WHERE event_id = $1",
        event_id,
        signed(fans_per_minute),
        active_fan_cap.map(signed)
    )
    .execute(conn)
    .await?
    .rows_affected())
}

/// The category codes of event `event_id`'s seats that have no price: a sale with
/// such seats would let fans claim seats nobody can pay for.
///
/// # Errors
/// [`Error::Database`].
pub async fn unpriced_categories(conn: &mut PgConnection, event_id: i64) -> Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        "SELECT DISTINCT s.category_code
         FROM catalog.events e JOIN catalog.seats s ON s.venue_id = e.venue_id
         WHERE e.event_id = $1
           AND NOT EXISTS (SELECT 1 FROM catalog.price_categories pc
                           WHERE pc.event_id = e.event_id AND pc.category_code = s.category_code)
         ORDER BY 1",
        event_id
    )
    .fetch_all(conn)
    .await?)
}
