//! PostgreSQL access for holds. The hot operations (claim, best available,
//! StartPayment, ExtendHold, ConfirmHold) are one statement each, a plpgsql function
//! run on the pool as its own transaction; the rest take `&mut PgConnection` and the
//! caller owns the transaction (begin, commit, retry). Nothing here makes a network
//! call to anything but the database.
//!
//! Time always comes from the database clock (`now()`, the transaction's start), so
//! replicas with skewed clocks agree on what has expired.

mod best;
mod claim;
mod claim_many;
mod holds;
mod layout;
mod payment;
mod section_seats;
pub mod statements;
mod sweep;

pub use best::{BestOutcome, claim_best};
pub use claim::{ClaimOutcome, Claimed, claim};
pub use claim_many::{Batched, claim_many};
pub use holds::{ReleaseScope, admin_release, get, live_holds, release};
pub use layout::{event_layout, unavailable_counts};
pub use payment::{Extended, PaymentStarted, confirm, extend, start_payment};
pub use section_seats::section_seats;
pub use sweep::sweep_expired;

use sqlx::FromRow;

use crate::domain::{EventId, Hold, HoldKey, HoldStatus, SeatId, SectionId};
use crate::error::Error;

/// The unique index that decides every claim (`migrations/…_holds.sql`).
pub const ONE_ACTIVE_CLAIM: &str = "seat_holds_one_active_claim";

/// One row of a hold as read back for reporting and decisions.
#[derive(Debug, FromRow)]
pub(crate) struct HoldRow {
    hold_key: uuid::Uuid,
    event_id: i64,
    section_id: i64,
    seat_id: i64,
    fan_id: String,
    #[sqlx(try_from = "String")]
    status: HoldStatus,
    kind: String,
    /// Milliseconds left by the database clock (0 unless held).
    expires_in_ms: i64,
    /// The TTL the row was claimed with (0 for blocks and comps).
    ttl_ms: i64,
    /// Held, but its `expires_at` is not after the transaction's `now()`.
    lapsed: bool,
    /// Its payment has started (`payment_started_at` set).
    in_payment: bool,
}

/// Columns of [`HoldRow`], shared by every read of a hold.
pub(crate) const HOLD_COLUMNS: &str = "hold_key, event_id, section_id, seat_id, fan_id, status, kind, \
     CASE WHEN status = 'held' \
          THEN GREATEST(0, floor(extract(epoch FROM (expires_at - clock_timestamp())) * 1000))::bigint \
          ELSE 0 END AS expires_in_ms, \
     CASE WHEN kind = 'fan' \
          THEN round(extract(epoch FROM (expires_at - created_at)) * 1000)::bigint \
          ELSE 0 END AS ttl_ms, \
     (status = 'held' AND expires_at <= now()) AS lapsed, \
     payment_started_at IS NOT NULL AS in_payment";

/// What the rows of one hold say, taken together.
#[derive(Debug)]
pub(crate) struct HoldRows {
    pub(crate) rows: Vec<HoldRow>,
}

impl HoldRows {
    pub(crate) fn owner(&self) -> Option<&str> {
        self.rows.first().map(|r| r.fan_id.as_str())
    }

    pub(crate) fn kind(&self) -> Option<&str> {
        self.rows.first().map(|r| r.kind.as_str())
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

/// The rows of the hold `key`, ascending by seat; with `lock`, each row is locked
/// `FOR UPDATE` in that order (the claim path's lock order, so no deadlock with it).
pub(crate) async fn hold_rows(
    conn: &mut sqlx::PgConnection,
    key: HoldKey,
    lock: bool,
) -> Result<HoldRows, Error> {
    let sql = format!(
        "SELECT {HOLD_COLUMNS} FROM holds.seat_holds WHERE hold_key = $1 ORDER BY seat_id{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let rows = sqlx::query_as::<_, HoldRow>(&sql)
        .bind(key.uuid())
        .fetch_all(&mut *conn)
        .await?;
    Ok(HoldRows { rows })
}
