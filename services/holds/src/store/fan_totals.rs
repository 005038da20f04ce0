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
}

/// `fan`'s totals of `event` in this database; `other_admission_hold` leaves out
/// `hold` (the claim being checked): one statement, on the fan's rows only.
///
/// # Errors
/// [`Error::Database`].
pub async fn fan_totals<'e>(
    db: impl PgExecutor<'e>,
    event: EventId,
    fan: &FanId,
    admission_jti: &str,
    hold: HoldKey,
) -> Result<FanTotals, Error> {
    let row = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE h.status = 'booked' OR h.expires_at > now())
                      AS "seats!",
                  (array_agg(h.hold_key) FILTER (
                       WHERE h.status = 'held' AND h.expires_at > now()
                         AND h.admission_jti = $3 AND h.hold_key <> $4))[1]
                      AS other_admission_hold,
                  (SELECT es.max_seats_per_fan FROM catalog.event_settings es
                   WHERE es.event_id = $1) AS max_seats_per_fan
           FROM holds.seat_holds h
           WHERE h.event_id = $1 AND h.fan_id = $2
             AND h.status IN ('held', 'booked') AND h.kind = 'fan'"#,
        event.get(),
        fan.as_str(),
        admission_jti,
        hold.uuid(),
    )
    .fetch_one(db)
    .await?;
    Ok(FanTotals {
        seats: row.seats,
        other_admission_hold: row.other_admission_hold.map(HoldKey::from),
        max_seats_per_fan: row.max_seats_per_fan,
    })
}
