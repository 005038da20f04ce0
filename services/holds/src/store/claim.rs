//! The claim: one short READ COMMITTED transaction, in this order.
//!
//! 1. Event settings (status, TTL, limits) from `catalog.event_settings`.
//! 2. Fans only: lock the (event, fan) row of `holds.fan_claim_locks`, then count the
//!    fan's active seats and this admission's active holds. Two claims of one fan run
//!    one after the other from here on, so the limits are decided on data no concurrent
//!    claim of that fan can change (C02); other fans never wait on this row.
//! 3. Every seat must be a seat of the requested section of the event's venue.
//! 4. Seat by seat in ascending order, in one call of `holds.claim_in_seat_order`
//!    (migration `20261130010002`): mark a lapsed `held` row of the seat `expired` (lazy
//!    expiry), then insert the new row. Two claims overlapping in any order take every
//!    lock of a seat (the lapsed row and the unique-index entry) before the next seat,
//!    in the same order, so they meet at their lowest common seat: one waits for the
//!    other and then either proceeds or fails with 23505 on
//!    [`ONE_ACTIVE_CLAIM`](super::ONE_ACTIVE_CLAIM) before holding anything the other
//!    needs. No deadlock (C04), never one seat each, even when a hold lapses between
//!    the starts of the two claims (`now()` is each transaction's start).
//!
//! 23505 on that index becomes [`Error::SeatTaken`] (without seat lists: the caller
//! rolls back and reads them with [`super::refusal`]).

use sqlx::{FromRow, PgConnection};

use super::ONE_ACTIVE_CLAIM;
use crate::domain::{Claim, Claimant, Hold, HoldKey, HoldStatus, Limit};
use crate::error::Error;
use stadium_db::{DbFailure, classify};

/// A successful claim.
#[derive(Debug, Clone)]
pub struct ClaimOutcome {
    /// The new hold.
    pub hold: Hold,
    /// Lapsed holds of these seats this claim marked expired on the way (lazy expiry).
    pub expired_on_the_way: u64,
}

#[derive(Debug, FromRow)]
struct Settings {
    status: String,
    hold_ttl_ms: i32,
    max_seats_per_claim: i32,
    max_seats_per_fan: i32,
}

#[derive(Debug, FromRow)]
struct FanCounts {
    seats: i64,
    admission_holds: i64,
}

fn limit(limit: Limit, max: i32) -> Error {
    Error::LimitExceeded {
        limit,
        max: u64::try_from(max).unwrap_or(0),
    }
}

/// Claims `claim.seats` as described in the module documentation.
///
/// # Errors
/// [`Error::EventNotFound`]; [`Error::EventNotOnSale`] (fans only);
/// [`Error::LimitExceeded`]; [`Error::SeatsNotInSection`] naming the seats that are not
/// there; [`Error::SeatTaken`] with empty lists on 23505; [`Error::Database`] for the
/// rest (40001/40P01 among them, for the caller to retry). On any error the caller must
/// roll back: a failed statement has aborted the transaction.
pub async fn claim(conn: &mut PgConnection, claim: &Claim) -> Result<ClaimOutcome, Error> {
    let event = claim.event.get();
    let seats = claim.seats.raw();
    let settings: Settings = sqlx::query_as(
        "SELECT status, hold_ttl_ms, max_seats_per_claim, max_seats_per_fan \
         FROM catalog.event_settings WHERE event_id = $1",
    )
    .bind(event)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(Error::EventNotFound)?;

    let (owner, jti, status, kind, note, ttl_ms) = match &claim.claimant {
        Claimant::Fan { fan, admission_jti } => {
            if settings.status != "on_sale" {
                return Err(Error::EventNotOnSale(settings.status));
            }
            let wanted = i64::try_from(claim.seats.len()).unwrap_or(i64::MAX);
            if wanted > i64::from(settings.max_seats_per_claim) {
                return Err(limit(Limit::SeatsPerClaim, settings.max_seats_per_claim));
            }
            lock_fan(conn, event, fan.as_str()).await?;
            let counts: FanCounts = sqlx::query_as(
                "SELECT count(*) FILTER (WHERE status = 'booked' OR expires_at > now()) AS seats, \
                        count(DISTINCT hold_key) FILTER ( \
                            WHERE status = 'held' AND expires_at > now() AND admission_jti = $3 \
                        ) AS admission_holds \
                 FROM holds.seat_holds \
                 WHERE event_id = $1 AND fan_id = $2 AND status IN ('held', 'booked') AND kind = 'fan'",
            )
            .bind(event)
            .bind(fan.as_str())
            .bind(admission_jti)
            .fetch_one(&mut *conn)
            .await?;
            if counts.admission_holds > 0 {
                return Err(limit(Limit::HoldsPerAdmission, 1));
            }
            if counts.seats.saturating_add(wanted) > i64::from(settings.max_seats_per_fan) {
                return Err(limit(Limit::SeatsPerFan, settings.max_seats_per_fan));
            }
            (
                fan.as_str(),
                Some(admission_jti.as_str()),
                "held",
                "fan",
                None,
                settings.hold_ttl_ms,
            )
        }
        Claimant::Block { admin, reason } => (
            admin.as_str(),
            None,
            "blocked",
            "block",
            Some(reason.as_str()),
            0,
        ),
        Claimant::Comp { admin, recipient } => (
            admin.as_str(),
            None,
            "booked",
            "comp",
            Some(recipient.as_str()),
            0,
        ),
    };

    let present: Vec<i64> = sqlx::query_scalar(
        "SELECT seat_id FROM catalog.event_seats \
         WHERE event_id = $1 AND section_id = $2 AND seat_id = ANY($3)",
    )
    .bind(event)
    .bind(claim.section.get())
    .bind(&seats)
    .fetch_all(&mut *conn)
    .await?;
    if present.len() != seats.len() {
        let missing = claim
            .seats
            .as_slice()
            .iter()
            .copied()
            .filter(|s| !present.contains(&s.get()))
            .collect();
        return Err(Error::SeatsNotInSection(missing));
    }

    let key = HoldKey::generate();
    let (expired, expires_in_ms) = sqlx::query_as::<_, (i64, i64)>(
        "SELECT expired, expires_in_ms FROM holds.claim_in_seat_order( \
             $1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(key.uuid())
    .bind(event)
    .bind(claim.section.get())
    .bind(&seats)
    .bind(owner)
    .bind(jti)
    .bind(status)
    .bind(kind)
    .bind(note)
    .bind(ttl_ms)
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| match classify(&e) {
        DbFailure::UniqueViolation { constraint }
            if constraint.as_deref() == Some(ONE_ACTIVE_CLAIM) =>
        {
            Error::SeatTaken {
                taken: Vec::new(),
                alternatives: Vec::new(),
            }
        }
        _ => Error::Database(e),
    })?;

    Ok(ClaimOutcome {
        hold: Hold {
            key,
            event: claim.event,
            section: claim.section,
            seats: claim.seats.as_slice().to_vec(),
            status: HoldStatus::from_db(status).unwrap_or(HoldStatus::Held),
            expires_in_ms: u64::try_from(expires_in_ms).unwrap_or(0),
            ttl_ms: u64::try_from(ttl_ms).unwrap_or(0),
            owner: owner.to_owned(),
        },
        expired_on_the_way: u64::try_from(expired).unwrap_or(0),
    })
}

/// Serialises the claims of one fan for one event (see the module documentation). The
/// insert is a no-op after the fan's first claim; a concurrent first insert waits for
/// the other's commit and then does nothing.
async fn lock_fan(conn: &mut PgConnection, event: i64, fan: &str) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO holds.fan_claim_locks (event_id, fan_id) VALUES ($1, $2) \
         ON CONFLICT (event_id, fan_id) DO NOTHING",
    )
    .bind(event)
    .bind(fan)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "SELECT 1 FROM holds.fan_claim_locks WHERE event_id = $1 AND fan_id = $2 FOR UPDATE",
    )
    .bind(event)
    .bind(fan)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
