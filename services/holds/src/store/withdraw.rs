//! A fan's claim withdrawn after it committed, because the service refuses it after
//! all (a per-fan limit counted across shards, `service::fan_limits`).

use sqlx::PgConnection;

use super::{locked_hold_rows, record_actor};
use crate::domain::HoldKey;
use crate::error::Error;

/// Withdraws the fan hold `key`: its seats are released (the seat history records the
/// release, by `actor`), then its rows are removed, so that its key — derived from the
/// claim's request id — is free again and a retry of the refused claim is claimed and
/// checked anew instead of being answered with this hold. A hold whose payment has
/// started (its fan found it and confirmed) or that is no longer held is left as it is.
/// Locks the rows in seat order first, as every writer of a hold does. Run it in a
/// transaction (the caller's).
///
/// # Errors
/// [`Error::Database`].
pub async fn withdraw(
    conn: &mut PgConnection,
    key: HoldKey,
    actor: &str,
) -> Result<Withdrawal, Error> {
    if locked_hold_rows(conn, key).await?.kind().is_none() {
        return Ok(Withdrawal::Gone);
    }
    record_actor(conn, actor).await?;
    let released = sqlx::query!(
        "UPDATE holds.seat_holds SET status = 'released', updated_at = now() \
         WHERE hold_key = $1 AND kind = 'fan' AND status = 'held' \
           AND payment_started_at IS NULL",
        key.uuid(),
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if released == 0 {
        return Ok(Withdrawal::Kept);
    }
    sqlx::query!(
        "DELETE FROM holds.seat_holds WHERE hold_key = $1 AND status = 'released'",
        key.uuid(),
    )
    .execute(&mut *conn)
    .await?;
    Ok(Withdrawal::Withdrawn)
}

/// What [`withdraw`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withdrawal {
    /// Released and removed.
    Withdrawn,
    /// Left as it is: its payment has started, or it is no longer held.
    Kept,
    /// No rows: withdrawn before (by another check of the same hold).
    Gone,
}
