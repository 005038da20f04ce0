//! Fans' claims coalesced: one call of `holds.claim_many` (migration `20261202020000`)
//! runs several claims in one transaction, each still all or nothing. Every lock of
//! every claim is taken first in one global order (fans, then seats' advisory locks,
//! then lapsed rows), so no deadlock can form, whatever seats the claims of two batches
//! share; a seat's lock held elsewhere is not waited for: its claim comes back
//! [`Batched::Busy`], for the caller to run alone. Claims that nothing can refuse are
//! inserted in one statement. A claim whose hold key already has rows is answered
//! [`Claimed::Repeated`] and the batch's other claims busy (migration
//! `20261203020000`).

use sqlx::PgExecutor;

use super::claim::{Claimed, claim_row, decide};
use crate::domain::{Claim, Claimant, HoldKey};
use crate::error::Error;

/// What a batch did with one claim.
#[derive(Debug)]
pub enum Batched {
    /// Decided in the batch, as [`claim`](super::claim) would have answered alone.
    Answered(Result<Claimed, Error>),
    /// Not run: another transaction held the lock of one of its seats. Nothing was
    /// written for it; run it alone (`claim`), which waits its turn.
    Busy,
}

/// Claims every fan claim of `claims` in one statement (its own transaction); the
/// answers come back in the order of `claims`.
///
/// # Errors
/// The whole call: [`Error::Database`] (nothing of the batch is written);
/// [`Error::CorruptRow`] when the rows do not match the claims, or, before anything
/// runs, when a claim is not a fan's (only fans' claims are coalesced). Per claim: as
/// [`claim`](super::claim).
pub async fn claim_many<'e>(
    db: impl PgExecutor<'e>,
    claims: &[&Claim],
) -> Result<Vec<Batched>, Error> {
    let keys: Vec<HoldKey> = claims.iter().map(|claim| claim.hold_key()).collect();
    let mut fans = Vec::with_capacity(claims.len());
    let mut jtis = Vec::with_capacity(claims.len());
    for claim in claims {
        let Claimant::Fan { fan, admission_jti } = &claim.claimant else {
            return Err(Error::CorruptRow(
                "claim_many: a claim that is not a fan's".into(),
            ));
        };
        fans.push(fan.as_str());
        jtis.push(admission_jti.as_str());
    }
    let mut seat_claims = Vec::new();
    let mut seat_ids = Vec::new();
    for (i, claim) in claims.iter().enumerate() {
        let ordinal = i32::try_from(i + 1).unwrap_or(i32::MAX);
        for seat in claim.seats.raw() {
            seat_claims.push(ordinal);
            seat_ids.push(seat);
        }
    }
    let uuids: Vec<uuid::Uuid> = keys.iter().map(|k| k.uuid()).collect();
    let events: Vec<i64> = claims.iter().map(|c| c.event.get()).collect();
    let sections: Vec<i64> = claims.iter().map(|c| c.section.get()).collect();
    // One row per claim: its 1-based ordinal and its `holds.claim` columns.
    let rows = sqlx::query_file!(
        "src/store/sql/claim_many.sql",
        &uuids,
        &events,
        &sections,
        &fans as &[&str],
        &jtis as &[&str],
        &seat_claims,
        &seat_ids,
    )
    .fetch_all(db)
    .await?;
    if rows.len() != claims.len()
        || rows
            .iter()
            .enumerate()
            .any(|(i, r)| usize::try_from(r.ordinal).ok() != Some(i + 1))
    {
        return Err(Error::CorruptRow(format!(
            "claim_many: {} rows for {} claims",
            rows.len(),
            claims.len()
        )));
    }
    Ok(rows
        .into_iter()
        .zip(claims.iter().zip(keys))
        .zip(fans)
        .map(|((many, (claim, key)), fan)| {
            if many.outcome == "busy" {
                return Batched::Busy;
            }
            Batched::Answered(decide(
                claim_row!(many),
                key,
                claim.event,
                claim.section,
                claim.seats.as_slice(),
                fan,
            ))
        })
        .collect())
}
