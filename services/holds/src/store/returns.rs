//! The returns queue (migration `20261204000000`): best-available claims that found no
//! fitting block while seats were held, waiting in order for seats to come back.

use sqlx::{PgConnection, PgExecutor};

use crate::domain::best::{BestRequest, Target};
use crate::domain::{EventId, FanId, RequestId, SectionId};
use crate::error::Error;

/// A queued claim, as the server serves it.
#[derive(Debug, Clone)]
pub struct QueuedClaim {
    /// Its place in the queue (lower is earlier; the queue of every event shares one
    /// sequence).
    pub place: i64,
    /// The claim, with its request id.
    pub request: BestRequest,
    /// Whose.
    pub fan: FanId,
    /// The admission it was made with.
    pub admission_jti: String,
}

/// Queues `request` (which has `request_id`) for `fan`'s admission `admission_jti`,
/// valid until `admission_expires_at` (Unix seconds, the token's `exp`); asked again,
/// the entry keeps its place and takes the latest request. Returns its 1-based position
/// in the event's line, or `None` when nothing in the event is held (no seat can come
/// back) and nothing was queued: neither in this database nor, as `held_on_shards`
/// says (see [`seats_held`]), on the shards besides it (migration `20261219000000`).
///
/// # Errors
/// [`Error::Database`].
pub async fn queue_for_returns<'e>(
    db: impl PgExecutor<'e>,
    request: &BestRequest,
    request_id: &RequestId,
    fan: &FanId,
    admission_jti: &str,
    admission_expires_at: u64,
    held_on_shards: bool,
) -> Result<Option<u64>, Error> {
    let (section, category) = match &request.target {
        Target::Section(section) => (Some(section.get()), None),
        Target::Category(code) => (None, Some(code.as_str())),
    };
    let place = sqlx::query_scalar!(
        r#"SELECT place_in_line AS "place_in_line!"
           FROM holds.queue_for_returns($1, $2, $3, to_timestamp($4), $5, $6, $7, $8, $9, $10,
                                        $11)"#,
        request.event.get(),
        fan.as_str(),
        admission_jti,
        admission_expires_at as f64,
        request_id.as_str(),
        section,
        category,
        i32::try_from(request.quantity).unwrap_or(i32::MAX),
        request.together,
        &request.also_categories,
        held_on_shards,
    )
    .fetch_optional(db)
    .await?;
    Ok(place.map(|p| u64::try_from(p).unwrap_or(0)))
}

/// Whether any seat of `event` is held (unexpired) in this database: one that may come
/// back to the returns queue.
///
/// # Errors
/// [`Error::Database`].
pub async fn seats_held<'e>(db: impl PgExecutor<'e>, event: EventId) -> Result<bool, Error> {
    let held = sqlx::query_scalar!(
        r#"SELECT EXISTS (
               SELECT 1 FROM holds.seat_holds h
               WHERE h.status = 'held' AND h.expires_at > now() AND h.event_id = $1
           ) AS "held!""#,
        event.get(),
    )
    .fetch_one(db)
    .await?;
    Ok(held)
}

/// The first `limit` queued claims of every event, in queue order, whose admission is
/// still valid.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`] for a row no request could have made.
pub async fn queued_claims<'e>(
    db: impl PgExecutor<'e>,
    limit: u32,
) -> Result<Vec<QueuedClaim>, Error> {
    let rows = sqlx::query!(
        "SELECT place, event_id, fan_id, admission_jti, request_id, section_id, \
                price_category, quantity, together, also_price_categories \
         FROM holds.return_queue \
         WHERE admission_expires_at > now() \
         ORDER BY place LIMIT $1",
        i64::from(limit),
    )
    .fetch_all(db)
    .await?;
    let corrupt =
        |what: &str, place: i64| Error::CorruptRow(format!("return_queue {place}: {what}"));
    rows.into_iter()
        .map(|row| {
            let target = match (row.section_id, row.price_category) {
                (Some(section), None) => Target::Section(
                    SectionId::try_from(section).map_err(|_| corrupt("section_id", row.place))?,
                ),
                (None, Some(code)) => Target::Category(code),
                _ => return Err(corrupt("target", row.place)),
            };
            Ok(QueuedClaim {
                place: row.place,
                request: BestRequest {
                    event: EventId::try_from(row.event_id)
                        .map_err(|_| corrupt("event_id", row.place))?,
                    target,
                    quantity: u32::try_from(row.quantity)
                        .map_err(|_| corrupt("quantity", row.place))?,
                    together: row.together,
                    also_categories: row.also_price_categories,
                    request: Some(
                        RequestId::try_from(row.request_id.as_str())
                            .map_err(|_| corrupt("request_id", row.place))?,
                    ),
                },
                fan: FanId::try_from(row.fan_id.as_str())
                    .map_err(|_| corrupt("fan_id", row.place))?,
                admission_jti: row.admission_jti,
            })
        })
        .collect()
}

/// Locks the queued claim at `place` until the end of `conn`'s transaction (a fan
/// leaving the line, or asking again, waits); its request id now and when it was
/// queued (Unix seconds), `None` when it has left the line.
///
/// # Errors
/// [`Error::Database`].
pub async fn lock_queued(
    conn: &mut PgConnection,
    place: i64,
) -> Result<Option<(String, f64)>, Error> {
    let row = sqlx::query!(
        r#"SELECT request_id, extract(epoch FROM queued_at)::float8 AS "queued_at!"
           FROM holds.return_queue WHERE place = $1 FOR UPDATE"#,
        place,
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|r| (r.request_id, r.queued_at)))
}

/// Whether `fan` got seats in this database with admission `admission_jti` of `event`
/// since `since` (Unix seconds): on a shard, where the trigger that takes such an
/// admission out of the main database's line (migration `20261204010000`) cannot
/// reach.
///
/// # Errors
/// [`Error::Database`].
pub async fn claimed_since<'e>(
    db: impl PgExecutor<'e>,
    event: EventId,
    fan: &FanId,
    admission_jti: &str,
    since: f64,
) -> Result<bool, Error> {
    let claimed = sqlx::query_scalar!(
        r#"SELECT EXISTS (
               SELECT 1 FROM holds.seat_holds h
               WHERE h.event_id = $1 AND h.fan_id = $2 AND h.admission_jti = $3
                 AND h.kind = 'fan' AND h.created_at >= to_timestamp($4)
           ) AS "claimed!""#,
        event.get(),
        fan.as_str(),
        admission_jti,
        since,
    )
    .fetch_one(db)
    .await?;
    Ok(claimed)
}

/// Takes the claim at `place` off the queue (served or refused); nothing if gone.
///
/// # Errors
/// [`Error::Database`].
pub async fn dequeue<'e>(db: impl PgExecutor<'e>, place: i64) -> Result<(), Error> {
    sqlx::query!("DELETE FROM holds.return_queue WHERE place = $1", place)
        .execute(db)
        .await?;
    Ok(())
}

/// Takes `fan`'s claim made with admission `admission_jti` off the queue; whether there
/// was one.
///
/// # Errors
/// [`Error::Database`].
pub async fn leave_returns_queue<'e>(
    db: impl PgExecutor<'e>,
    fan: &FanId,
    admission_jti: &str,
) -> Result<bool, Error> {
    let done = sqlx::query!(
        "DELETE FROM holds.return_queue WHERE admission_jti = $1 AND fan_id = $2",
        admission_jti,
        fan.as_str(),
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Drops queued claims whose admission has expired; how many.
///
/// # Errors
/// [`Error::Database`].
pub async fn drop_lapsed_admissions<'e>(db: impl PgExecutor<'e>) -> Result<u64, Error> {
    let done = sqlx::query!("DELETE FROM holds.return_queue WHERE admission_expires_at <= now()")
        .execute(db)
        .await?;
    Ok(done.rows_affected())
}
