//! Reading and releasing existing holds. Each locks the hold's rows in seat
//! order first, then decides on what it locked: a concurrent claim, sweep or confirm of
//! the same rows waits or is waited for, and the decision cannot rest on a stale read.

use sqlx::PgConnection;

use super::{HoldRow, HoldRows, hold_rows, locked_hold_rows};
use crate::domain::{EventId, Hold, HoldKey, HoldKind, HoldStatus};
use crate::error::Error;

fn owned_by(rows: &HoldRows, owner: Option<&str>) -> bool {
    match owner {
        None => !rows.rows.is_empty(),
        Some(fan) => rows.owner() == Some(fan) && rows.kind() == Some(HoldKind::Fan),
    }
}

fn reported(rows: &HoldRows) -> Result<Hold, Error> {
    rows.to_hold()?.ok_or(Error::HoldNotFound)
}

/// The hold `key` if `fan` owns it.
///
/// # Errors
/// [`Error::HoldNotFound`] when there is no such hold or another fan owns it (the two
/// are indistinguishable to the caller); [`Error::Database`].
pub async fn get(conn: &mut PgConnection, key: HoldKey, fan: &str) -> Result<Hold, Error> {
    let rows = hold_rows(conn, key).await?;
    if !owned_by(&rows, Some(fan)) {
        return Err(Error::HoldNotFound);
    }
    reported(&rows)
}

/// `fan`'s live holds of `event` (held and unexpired, in payment or not), by hold key;
/// with `admission`, only the one claimed with that admission token (`jti`). One read
/// on the fan's active-claims index (`seat_holds_fan_active_idx`, whose predicate the
/// redundant-looking `status IN ('held', 'booked')` repeats so the planner uses it).
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn live_holds(
    conn: &mut PgConnection,
    event: EventId,
    fan: &str,
    admission: Option<&str>,
) -> Result<Vec<Hold>, Error> {
    let rows = sqlx::query_file_as!(
        HoldRow,
        "src/store/sql/live_holds.sql",
        event.get(),
        fan,
        admission,
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut holds = Vec::new();
    let mut rows = rows.into_iter().peekable();
    while let Some(first) = rows.next() {
        let key = first.hold_key;
        let mut one = vec![first];
        while let Some(row) = rows.next_if(|r| r.hold_key == key) {
            one.push(row);
        }
        holds.extend(HoldRows { rows: one }.to_hold()?);
    }
    Ok(holds)
}

/// Releases the fan's held seats of hold `key` at once. Releasing a released hold
/// returns it unchanged.
///
/// # Errors
/// [`Error::HoldNotFound`] (absent or another fan's); [`Error::HoldBooked`];
/// [`Error::HoldExpired`] (lapsed, swept, or reclaimed); [`Error::PaymentStarted`];
/// [`Error::Database`].
pub async fn release(conn: &mut PgConnection, key: HoldKey, fan: &str) -> Result<Hold, Error> {
    let rows = locked_hold_rows(conn, key).await?;
    if !owned_by(&rows, Some(fan)) {
        return Err(Error::HoldNotFound);
    }
    if rows.all(HoldStatus::Released) {
        return reported(&rows);
    }
    if rows.any(HoldStatus::Booked) {
        return Err(Error::HoldBooked);
    }
    if rows.any_lapsed() || !rows.all(HoldStatus::Held) {
        return Err(Error::HoldExpired);
    }
    if rows.in_payment() {
        return Err(Error::PaymentStarted);
    }
    sqlx::query!(
        "UPDATE holds.seat_holds SET status = 'released', updated_at = now() \
         WHERE hold_key = $1 AND status = 'held'",
        key.uuid(),
    )
    .execute(&mut *conn)
    .await?;
    reported(&hold_rows(conn, key).await?)
}

/// Box office / service: ends a block, or (service only: payments after a refund) a
/// comp or a booking. Idempotent: a released hold is returned unchanged. `actor` (an
/// admin's `sub` or a service's name) is recorded as who made the change in the seat
/// history (the transaction's `stadium.actor` setting, read by the history trigger).
///
/// Box-office staff may end blocks only: releasing a booking or a comp without its
/// refund would leave money or tickets without seats, so that goes through payments.
///
/// # Errors
/// [`Error::HoldNotFound`]; [`Error::ReleaseNotAllowed`] for a fan's or comp's seats
/// under [`ReleaseScope::BlocksOnly`]; [`Error::Database`].
pub async fn admin_release(
    conn: &mut PgConnection,
    key: HoldKey,
    scope: ReleaseScope,
    actor: &str,
) -> Result<Hold, Error> {
    let rows = locked_hold_rows(conn, key).await?;
    if !owned_by(&rows, None) {
        return Err(Error::HoldNotFound);
    }
    if scope == ReleaseScope::BlocksOnly && rows.kind() != Some(HoldKind::Block) {
        return Err(Error::ReleaseNotAllowed);
    }
    record_actor(conn, actor).await?;
    sqlx::query!(
        "UPDATE holds.seat_holds SET status = 'released', updated_at = now() \
         WHERE hold_key = $1 AND status IN ('held', 'booked', 'blocked')",
        key.uuid(),
    )
    .execute(&mut *conn)
    .await?;
    reported(&hold_rows(conn, key).await?)
}

/// Names `actor` as who makes this transaction's seat changes, for the seat history
/// (`set_config(…, true)`: the setting ends with the transaction, so a pooled
/// connection never carries it to the next caller).
///
/// # Errors
/// [`Error::Database`].
pub async fn record_actor(conn: &mut PgConnection, actor: &str) -> Result<(), Error> {
    sqlx::query("SELECT set_config('stadium.actor', $1, true)")
        .bind(actor)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Which holds an admin release may end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseScope {
    /// Box-office staff: blocks only.
    BlocksOnly,
    /// The payments service (after a refund) and the service itself: any hold.
    Any,
}
