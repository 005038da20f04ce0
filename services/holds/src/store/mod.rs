//! PostgreSQL access for holds. The hot operations (claim, best available,
//! StartPayment, ExtendHold, ConfirmHold) are one statement each, a plpgsql function
//! run on the pool as its own transaction; the rest take `&mut PgConnection` and the
//! caller owns the transaction (begin, commit, retry). Nothing here makes a network
//! call to anything but the database.
//!
//! Time always comes from the database clock (`now()`, the transaction's start), so
//! replicas with skewed clocks agree on what has expired.

mod best;
mod channel_best;
pub mod channels;
mod claim;
mod claim_many;
mod family;
mod fan_totals;
mod history;
pub mod hold_checks;
mod holds;
mod layout;
mod payment;
mod returns;
pub mod section_load;
mod section_seats;
pub mod statements;
mod sweep;
mod withdraw;

pub use best::{BestOutcome, claim_best};
pub use channel_best::{channel_free_seats, claim_best_with_code};
pub use channels::{Assignment, ChannelState};
pub use claim::{ClaimOutcome, Claimed, claim};
pub use claim_many::{Batched, claim_many};
pub use family::other_of_family;
pub use fan_totals::{FanTotals, fan_totals};
pub use history::trim_seat_history;
pub use holds::{ReleaseScope, admin_release, get, live_holds, record_actor, release};
pub use layout::{event_layout, unavailable_seat_ids};
pub use payment::{Extended, PaymentStarted, confirm, extend, start_payment};
pub use returns::{
    QueuedClaim, claimed_since, dequeue, drop_lapsed_admissions, leave_returns_queue, lock_queued,
    queue_for_returns, queued_claims, seats_held,
};
pub use section_seats::section_seats;
pub use sweep::{Swept, sweep_expired};
pub use withdraw::{Withdrawal, withdraw};

use crate::domain::{EventId, Hold, HoldKey, HoldKind, HoldStatus, SeatId, SectionId};
use crate::error::Error;

/// The unique index that decides every claim (`migrations/…_holds.sql`).
pub const ONE_ACTIVE_CLAIM: &str = "seat_holds_one_active_claim";

stadium_db::text_enum!(HoldStatus);
stadium_db::text_enum!(HoldKind);

/// One row of a hold as read back for reporting and decisions (`sql/hold_rows.sql`,
/// `sql/live_holds.sql`).
#[derive(Debug)]
pub(crate) struct HoldRow {
    hold_key: uuid::Uuid,
    event_id: i64,
    section_id: i64,
    seat_id: i64,
    fan_id: String,
    status: HoldStatus,
    kind: HoldKind,
    /// Milliseconds left by the database clock (0 unless held).
    expires_in_ms: i64,
    /// The TTL the row was claimed with (0 for blocks and comps).
    ttl_ms: i64,
    /// Held, but its `expires_at` is not after the transaction's `now()`.
    lapsed: bool,
    /// Its payment has started (`payment_started_at` set).
    in_payment: bool,
}

/// What the rows of one hold say, taken together.
#[derive(Debug)]
pub(crate) struct HoldRows {
    pub(crate) rows: Vec<HoldRow>,
}

impl HoldRows {
    pub(crate) fn owner(&self) -> Option<&str> {
        self.rows.first().map(|r| r.fan_id.as_str())
    }

    pub(crate) fn kind(&self) -> Option<HoldKind> {
        self.rows.first().map(|r| r.kind)
    }

    pub(crate) fn all(&self, status: HoldStatus) -> bool {
        self.rows.iter().all(|r| r.status == status && !r.lapsed)
    }

    pub(crate) fn any(&self, status: HoldStatus) -> bool {
        self.rows.iter().any(|r| r.status == status)
    }

    pub(crate) fn in_payment(&self) -> bool {
        self.rows.iter().any(|r| r.in_payment)
    }

    pub(crate) fn any_lapsed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.lapsed || r.status == HoldStatus::Expired)
    }

    /// The hold these rows make up; `None` when there are none.
    pub(crate) fn to_hold(&self) -> Result<Option<Hold>, Error> {
        let Some(first) = self.rows.first() else {
            return Ok(None);
        };
        let corrupt = |what: &str| Error::CorruptRow(format!("hold {}: {what}", first.hold_key));
        let status = if self.any_lapsed() {
            HoldStatus::Expired
        } else {
            first.status
        };
        let seats = self
            .rows
            .iter()
            .map(|r| SeatId::try_from(r.seat_id).map_err(|_| corrupt("seat id")))
            .collect::<Result<Vec<_>, _>>()?;
        let held = status == HoldStatus::Held;
        Ok(Some(Hold {
            key: HoldKey::from(first.hold_key),
            event: EventId::try_from(first.event_id).map_err(|_| corrupt("event id"))?,
            section: SectionId::try_from(first.section_id).map_err(|_| corrupt("section id"))?,
            seats,
            status,
            expires_in_ms: if held {
                self.rows
                    .iter()
                    .map(|r| u64::try_from(r.expires_in_ms).unwrap_or(0))
                    .min()
                    .unwrap_or(0)
            } else {
                0
            },
            ttl_ms: u64::try_from(first.ttl_ms).unwrap_or(0),
            owner: first.fan_id.clone(),
        }))
    }
}

/// The rows of the hold `key`, ascending by seat.
pub(crate) async fn hold_rows(
    conn: &mut sqlx::PgConnection,
    key: HoldKey,
) -> Result<HoldRows, Error> {
    let rows = sqlx::query_file_as!(HoldRow, "src/store/sql/hold_rows.sql", key.uuid())
        .fetch_all(&mut *conn)
        .await?;
    Ok(HoldRows { rows })
}

/// Locks the rows of the hold `key` `FOR UPDATE` in ascending seat order (the claim
/// path's lock order, so no deadlock with it), then reads them as [`hold_rows`] does:
/// the read after the lock sees every change committed before it was granted.
pub(crate) async fn locked_hold_rows(
    conn: &mut sqlx::PgConnection,
    key: HoldKey,
) -> Result<HoldRows, Error> {
    sqlx::query!(
        "SELECT seat_id FROM holds.seat_holds WHERE hold_key = $1 ORDER BY seat_id FOR UPDATE",
        key.uuid(),
    )
    .fetch_all(&mut *conn)
    .await?;
    hold_rows(conn, key).await
}
