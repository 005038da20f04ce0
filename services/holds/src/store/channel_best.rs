//! Best available with a presale code or a channel's key (migration
//! `20261217000100_holds_claim_best_with_code.sql`): the channel's seats the code still
//! has free, and one call that tries ranked blocks of them in order.

use sqlx::PgExecutor;

use super::channels::code_outcome;
use super::claim::{Claimed, claim_row};
use crate::domain::best::Block;
use crate::domain::{EventId, FanId, HoldKey, PresaleCode, SectionId};
use crate::error::Error;

/// The seats of `sections` of `event` still set aside for the channel that `code` opens
/// (its `blocked` rows: neither held nor sold by one of its fans), ascending; `None`
/// when the code opens no live channel of the event.
///
/// # Errors
/// [`Error::Database`].
pub async fn channel_free_seats<'e>(
    db: impl PgExecutor<'e>,
    event: EventId,
    code: &PresaleCode,
    sections: &[SectionId],
) -> Result<Option<Vec<i64>>, Error> {
    let section_ids: Vec<i64> = sections.iter().map(|s| s.get()).collect();
    let seats = sqlx::query_scalar!(
        r#"SELECT ARRAY(
                   SELECT h.seat_id FROM holds.seat_holds h
                   WHERE h.hold_key = c.block_key AND h.status = 'blocked'
                     AND h.section_id = ANY($3)
                   ORDER BY h.seat_id) AS "seats!"
           FROM holds.presale_codes pc
           JOIN holds.channels c ON c.channel_id = pc.channel_id
           WHERE pc.event_id = $1 AND pc.code_sha256 = $2 AND c.released_at IS NULL"#,
        event.get(),
        &code.sha256()[..],
        &section_ids,
    )
    .fetch_optional(db)
    .await?;
    Ok(seats)
}

/// Tries `blocks` (all of one section, each of the same size) in order for `fan`
/// (admitted with `admission_jti`) with `code` until one is held, as the hold `key`:
/// [`Claimed::Taken`] with no seats when every block was taken by other fans of the
/// channel meanwhile.
///
/// # Errors
/// As `store::channels::claim_with_code` for the first block refused for another reason
/// than a taken seat; [`Error::CorruptRow`] for a block index out of range.
pub async fn claim_best_with_code<'e>(
    db: impl PgExecutor<'e>,
    key: HoldKey,
    event: EventId,
    blocks: &[Block],
    fan: &FanId,
    admission_jti: &str,
    code: &PresaleCode,
) -> Result<Claimed, Error> {
    let Some(first) = blocks.first() else {
        return Ok(Claimed::Taken {
            unavailable: Vec::new(),
        });
    };
    let quantity = first.seats.len();
    let flat: Vec<i64> = blocks
        .iter()
        .flat_map(|b| b.seats.iter().map(|s| s.get()))
        .collect();
    let row = sqlx::query!(
        r#"SELECT outcome AS "outcome!", detail, limit_max, seat_ids,
               expires_in_ms AS "expires_in_ms!", ttl_ms AS "ttl_ms!", expired AS "expired!",
               block
           FROM holds.claim_best_with_code($1, $2, $3, $4, $5, $6, $7, $8)"#,
        key.uuid(),
        event.get(),
        first.section.get(),
        &flat,
        i32::try_from(quantity).unwrap_or(i32::MAX),
        fan.as_str(),
        admission_jti,
        &code.sha256()[..],
    )
    .fetch_one(db)
    .await?;
    let chosen = row
        .block
        .and_then(|b| usize::try_from(b).ok())
        .and_then(|b| b.checked_sub(1))
        .map(|b| {
            blocks.get(b).ok_or_else(|| {
                Error::CorruptRow(format!("claim_best_with_code: block {b} out of range"))
            })
        })
        .transpose()?;
    let seats = chosen.map_or(&[][..], |block| block.seats.as_slice());
    code_outcome(
        claim_row!(row),
        key,
        event,
        first.section,
        seats,
        fan.as_str(),
    )
}
