//! Best available: one call of `holds.claim_best` (migration `20261201000003`), which
//! tries ranked blocks in order with `holds.claim` until one is held, so a block lost to
//! a concurrent claim is followed by the next best in the same round trip.

use sqlx::PgExecutor;

use super::claim::{Claimed, claim_row, decide};
use crate::domain::best::Block;
use crate::domain::{EventId, FanId, HoldKey, SectionId};
use crate::error::Error;

/// What one call came to, and how many blocks it tried.
#[derive(Debug)]
pub struct BestOutcome {
    /// Held (with the block that was), refused, or taken: every block was gone, with the
    /// unavailable seats of the call's sections now.
    pub claimed: Claimed,
    /// Blocks attempted in the database (those touching a seat known taken are skipped).
    pub attempts: u32,
}

/// Tries `blocks` in order for `fan` (admitted with `admission_jti`) until one is held,
/// as the hold `key`. `sections` are the sections whose unavailable seats a refusal
/// reports.
///
/// # Errors
/// As `store::claim` for the first attempt refused for another reason than a taken
/// seat; [`Error::CorruptRow`] for a block index out of range.
pub async fn claim_best<'e>(
    db: impl PgExecutor<'e>,
    key: HoldKey,
    event: EventId,
    sections: &[SectionId],
    blocks: &[Block],
    fan: &FanId,
    admission_jti: &str,
) -> Result<BestOutcome, Error> {
    let quantity = blocks.first().map_or(0, |b| b.seats.len());
    let flat: Vec<i64> = blocks
        .iter()
        .flat_map(|b| b.seats.iter().map(|s| s.get()))
        .collect();
    let block_sections: Vec<i64> = blocks.iter().map(|b| b.section.get()).collect();
    let section_ids: Vec<i64> = sections.iter().map(|s| s.get()).collect();
    let row = sqlx::query!(
        r#"SELECT outcome AS "outcome!", detail, limit_max, seat_ids,
               expires_in_ms AS "expires_in_ms!", ttl_ms AS "ttl_ms!", expired AS "expired!",
               block, attempts AS "attempts!"
           FROM holds.claim_best($1, $2, $3, $4, $5, $6, $7, $8)"#,
        key.uuid(),
        event.get(),
        &section_ids,
        &flat,
        &block_sections,
        i32::try_from(quantity).unwrap_or(i32::MAX),
        fan.as_str(),
        admission_jti,
    )
    .fetch_one(db)
    .await?;
    let attempts = u32::try_from(row.attempts).unwrap_or(0);
    let chosen = row
        .block
        .and_then(|b| usize::try_from(b).ok())
        .and_then(|b| b.checked_sub(1))
        .map(|b| {
            blocks
                .get(b)
                .ok_or_else(|| Error::CorruptRow(format!("claim_best: block {b} out of range")))
        })
        .transpose()?;
    let (section, seats) = match (chosen, sections.first()) {
        (Some(block), _) => (block.section, block.seats.as_slice()),
        (None, Some(&first)) => (first, &[][..]),
        (None, None) => return Err(Error::invalid("section_id", "no section to claim in")),
    };
    let claimed = decide(claim_row!(row), key, event, section, seats, fan.as_str())?;
    Ok(BestOutcome { claimed, attempts })
}
