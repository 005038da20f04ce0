//! A fan's active seats and an admission's live holds of an event in one database: what
//! the per-fan limits count, read on every database when sections sit on several
//! (`service::fan_limits`).

use sqlx::PgExecutor;

use crate::domain::{EventId, FanId, HoldKey};
use crate::error::Error;

/// What one database holds of a fan for an event, counted as `holds.claim` counts it
/// (migration `20261202020000`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FanTotals {
    /// The fan's seats booked, or held and unexpired.
    pub seats: i64,
    /// A live hold of the admission other than the one asked about, if any.
    pub other_admission_hold: Option<HoldKey>,
    /// The event's `max_seats_per_fan` as this database's catalog (or its copy) has it;
    /// `None` for an unknown event.
    pub max_seats_per_fan: Option<i32>,
    /// Seats in live holds and bookings made with the presale code asked about (every
    /// fan's); 0 without a code.
    pub code_seats: i64,
    /// The same, of this fan only.
    pub code_seats_by_fan: i64,
    /// The code's `max_seats` as this database's copy has it; `None` without one.
    pub code_max_seats: Option<i32>,
    /// The code's `max_seats_per_fan`; `None` without one.
    pub code_max_seats_per_fan: Option<i32>,
}

/// `fan`'s totals of `event` in this database, and those of the presale code whose
/// SHA-256 is `code` (counted as `holds.claim_with_code` counts them, migration
/// `20261208000100`); `other_admission_hold` leaves out `hold` (the claim being
/// checked): one statement, on the fan's and the code's rows only.
///
/// # Errors
/// [`Error::Database`].
pub async fn fan_totals<'e>(
    db: impl PgExecutor<'e>,
    event: EventId,
    fan: &FanId,
    admission_jti: &str,
    hold: HoldKey,
    code: Option<&[u8]>,
) -> Result<FanTotals, Error> {
    let row = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE h.status = 'booked' OR h.expires_at > now())
                      AS "seats!",
                  (array_agg(h.hold_key) FILTER (
                       WHERE h.status = 'held' AND h.expires_at > now()
                         AND h.admission_jti = $3 AND h.hold_key <> $4))[1]
                      AS other_admission_hold,
                  (SELECT es.max_seats_per_fan FROM catalog.event_settings es
                   WHERE es.event_id = $1) AS max_seats_per_fan,
                  (SELECT count(*) FROM holds.presale_codes pc
                   JOIN holds.seat_holds c ON c.presale_code_id = pc.code_id
                   WHERE pc.event_id = $1 AND pc.code_sha256 = $5
                     AND c.status IN ('held', 'booked')
                     AND (c.status = 'booked' OR c.expires_at > now())) AS "code_seats!",
                  (SELECT count(*) FROM holds.presale_codes pc
                   JOIN holds.seat_holds c ON c.presale_code_id = pc.code_id
                   WHERE pc.event_id = $1 AND pc.code_sha256 = $5 AND c.fan_id = $2
                     AND c.status IN ('held', 'booked')
                     AND (c.status = 'booked' OR c.expires_at > now())) AS "code_seats_by_fan!",
                  (SELECT pc.max_seats FROM holds.presale_codes pc
                   WHERE pc.event_id = $1 AND pc.code_sha256 = $5) AS code_max_seats,
                  (SELECT pc.max_seats_per_fan FROM holds.presale_codes pc
                   WHERE pc.event_id = $1 AND pc.code_sha256 = $5) AS code_max_seats_per_fan
           FROM holds.seat_holds h
           WHERE h.event_id = $1 AND h.fan_id = $2
             AND h.status IN ('held', 'booked') AND h.kind = 'fan'"#,
        event.get(),
        fan.as_str(),
        admission_jti,
        hold.uuid(),
        code,
    )
    .fetch_one(db)
    .await?;
    Ok(FanTotals {
        seats: row.seats,
        other_admission_hold: row.other_admission_hold.map(HoldKey::from),
        max_seats_per_fan: row.max_seats_per_fan,
        code_seats: row.code_seats,
        code_seats_by_fan: row.code_seats_by_fan,
        code_max_seats: row.code_max_seats,
        code_max_seats_per_fan: row.code_max_seats_per_fan,
    })
}
