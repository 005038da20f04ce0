//! The claim: one call of `holds.claim` (migration `20261201000001`), run as its own
//! transaction, so a claim costs one round trip to PostgreSQL.
//!
//! Inside that call, in this order: the event's status and limits; for fans, a
//! transaction-scoped advisory lock on the (event, fan) pair (the claims of one fan run
//! one after another from there, so the per-fan limit and one hold per admission are
//! decided on data no concurrent claim of that fan can change, case C02); every seat a seat of
//! the section (and its price fixed with the hold); then seat by seat in ascending order
//! a lapsed row of the seat marked `expired` (lazy expiry) and the new row inserted. Two
//! overlapping claims take every lock of a seat before the next seat, in the same order,
//! so they meet at their lowest common seat: one waits for the other and then proceeds
//! or is refused — no deadlock (C04), never one seat each.
//!
//! A 23505 on [`ONE_ACTIVE_CLAIM`](super::ONE_ACTIVE_CLAIM) is caught inside the call,
//! which writes nothing and answers with the section's unavailable seats
//! ([`Claimed::Taken`]), so a refusal needs no second read.
//!
//! A fan's claim whose hold key already has rows (a retry of a claim with a request id,
//! see `Claim::hold_key`) is answered [`Claimed::Repeated`] under the fan's lock, before
//! anything else is decided or written (migration `20261203020000`).

use sqlx::PgExecutor;

use crate::domain::{
    Claim, Claimant, EventId, Hold, HoldKey, HoldKind, HoldStatus, Limit, SeatId, SectionId,
};
use crate::error::Error;

/// A successful claim.
#[derive(Debug, Clone)]
pub struct ClaimOutcome {
    /// The new hold.
    pub hold: Hold,
    /// Lapsed holds of these seats this claim marked expired on the way (lazy expiry).
    pub expired_on_the_way: u64,
}

/// What a claim that reached the seats came to.
#[derive(Debug, Clone)]
pub enum Claimed {
    /// Every seat is claimed.
    Held(ClaimOutcome),
    /// Some seat has an active claim; nothing was written. `unavailable`: every seat id
    /// of the section with an active claim when the call looked, ascending.
    Taken {
        /// Unavailable seat ids of the section, ascending.
        unavailable: Vec<i64>,
    },
    /// The claim's request id already made a hold (the claim's key's family has one,
    /// in this section or another): this claim was made before. Nothing was written;
    /// the hold is read by the key given here.
    Repeated(HoldKey),
}

/// One row of `holds.claim` (and the same columns of `holds.claim_best` and
/// `holds.claim_many`).
#[derive(Debug)]
pub(super) struct ClaimRow {
    pub(super) outcome: String,
    pub(super) detail: Option<String>,
    pub(super) limit_max: Option<i32>,
    pub(super) seat_ids: Option<Vec<i64>>,
    pub(super) expires_in_ms: i64,
    pub(super) ttl_ms: i32,
    pub(super) expired: i64,
}

/// The [`ClaimRow`] in a checked query's record that has its seven columns (and maybe
/// more, which stay in the record).
macro_rules! claim_row {
    ($record:expr) => {
        $crate::store::claim::ClaimRow {
            outcome: $record.outcome,
            detail: $record.detail,
            limit_max: $record.limit_max,
            seat_ids: $record.seat_ids,
            expires_in_ms: $record.expires_in_ms,
            ttl_ms: $record.ttl_ms,
            expired: $record.expired,
        }
    };
}
pub(super) use claim_row;

/// The owner, admission jti and note of a claimant.
fn parameters(claimant: &Claimant) -> (&str, Option<&str>, Option<&str>) {
    match claimant {
        Claimant::Fan { fan, admission_jti } => (fan.as_str(), Some(admission_jti.as_str()), None),
        Claimant::Block { admin, reason } => (admin.as_str(), None, Some(reason)),
        Claimant::Comp { admin, recipient } => (admin.as_str(), None, Some(recipient)),
    }
}

/// Claims `claim.seats` in one statement, as described in the module documentation.
///
/// # Errors
/// [`Error::EventNotFound`]; [`Error::EventNotOnSale`] (fans only);
/// [`Error::LimitExceeded`]; [`Error::SeatsNotInSection`] naming the seats that are not
/// there; [`Error::Database`] for the rest (40001/40P01 among them, for the caller to
/// retry); [`Error::CorruptRow`] for an outcome this code does not know.
pub async fn claim<'e>(db: impl PgExecutor<'e>, claim: &Claim) -> Result<Claimed, Error> {
    let (owner, jti, note) = parameters(&claim.claimant);
    let key = claim.hold_key();
    let record = sqlx::query_file!(
        "src/store/sql/claim.sql",
        key.uuid(),
        claim.event.get(),
        claim.section.get(),
        &claim.seats.raw(),
        owner,
        jti,
        claim.claimant.kind() as HoldKind,
        note,
    )
    .fetch_one(db)
    .await?;
    decide(
        claim_row!(record),
        key,
        claim.event,
        claim.section,
        claim.seats.as_slice(),
        owner,
    )
}

/// The answer a claim's row gives for the hold `key` of `seats` of `section` of `event`
/// claimed by `owner`.
///
/// # Errors
/// As [`claim`].
pub(super) fn decide(
    row: ClaimRow,
    key: HoldKey,
    event: EventId,
    section: SectionId,
    seats: &[SeatId],
    owner: &str,
) -> Result<Claimed, Error> {
    let limit = |limit: Limit| Error::LimitExceeded {
        limit,
        hold: None,
        max: row
            .limit_max
            .and_then(|m| u64::try_from(m).ok())
            .unwrap_or(0),
    };
    match row.outcome.as_str() {
        "held" | "blocked" | "booked" => Ok(Claimed::Held(ClaimOutcome {
            hold: Hold {
                key,
                event,
                section,
                seats: seats.to_vec(),
                status: HoldStatus::from_db(&row.outcome).unwrap_or(HoldStatus::Held),
                expires_in_ms: u64::try_from(row.expires_in_ms).unwrap_or(0),
                ttl_ms: u64::try_from(row.ttl_ms).unwrap_or(0),
                owner: owner.to_owned(),
            },
            expired_on_the_way: u64::try_from(row.expired).unwrap_or(0),
        })),
        "seat_taken" => Ok(Claimed::Taken {
            unavailable: row.seat_ids.unwrap_or_default(),
        }),
        // `detail`: the key of the request's hold, in whichever section it was made.
        "repeated" => Ok(Claimed::Repeated(
            row.detail
                .as_deref()
                .and_then(|made| HoldKey::try_from(made).ok())
                .unwrap_or(key),
        )),
        "event_not_found" => Err(Error::EventNotFound),
        "event_not_on_sale" => Err(Error::EventNotOnSale(row.detail.unwrap_or_default())),
        "limit_exceeded" => match row.detail.as_deref() {
            Some("seats_per_claim") => Err(limit(Limit::SeatsPerClaim)),
            Some("seats_per_fan") => Err(limit(Limit::SeatsPerFan)),
            Some("holds_per_admission") => Err(limit(Limit::HoldsPerAdmission)),
            other => Err(Error::CorruptRow(format!("claim: unknown limit {other:?}"))),
        },
        "seats_not_in_section" => Err(Error::SeatsNotInSection(
            row.seat_ids
                .unwrap_or_default()
                .into_iter()
                .filter_map(|s| SeatId::try_from(s).ok())
                .collect(),
        )),
        other => Err(Error::CorruptRow(format!("claim: unknown outcome {other}"))),
    }
}
