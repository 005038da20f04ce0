//! Payment rows: the row type every payment statement returns, and the reads (by
//! hold key, by id, a fan's list). Rows are written by [`crate::lifecycle`] only.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::domain::{HoldKey, Money, Payment, PaymentStatus, RefundReason};
use crate::error::Error;

stadium_db::text_enum!(PaymentStatus);
stadium_db::text_enum!(RefundReason);

/// A `payments.payments` row as every payment statement returns it (`currency` as
/// text); filled by `sqlx::query_as!`, whose column names must be these fields'.
#[derive(Debug)]
pub(crate) struct PaymentRow {
    pub(crate) payment_id: Uuid,
    pub(crate) hold_key: Uuid,
    pub(crate) event_id: i64,
    pub(crate) fan_id: String,
    pub(crate) amount_minor: i64,
    pub(crate) currency: String,
    pub(crate) status: PaymentStatus,
    pub(crate) provider_charge_id: Option<String>,
    pub(crate) refund_id: Option<Uuid>,
    pub(crate) refund_reason: Option<RefundReason>,
    pub(crate) refunded_minor: i64,
    pub(crate) refunded_at: Option<DateTime<Utc>>,
    pub(crate) comp_recipient: Option<String>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) charge_attempt: i32,
    pub(crate) method_digest: Option<Vec<u8>>,
    pub(crate) declined: bool,
}

impl TryFrom<PaymentRow> for Payment {
    type Error = Error;

    fn try_from(row: PaymentRow) -> Result<Self, Error> {
        let corrupt = |what: &str| Error::CorruptRow(format!("payment {}: {what}", row.payment_id));
        Ok(Payment {
            id: row.payment_id,
            hold_key: HoldKey::from(row.hold_key),
            event_id: row.event_id,
            fan_id: row.fan_id,
            amount: Money {
                amount_minor: row.amount_minor,
                currency: row.currency.trim().to_owned(),
            },
            status: row.status,
            provider_charge_id: row.provider_charge_id,
            refund_id: row.refund_id,
            refund_reason: row.refund_reason,
            refunded_minor: row.refunded_minor,
            refunded_at: row.refunded_at,
            comp_recipient: row.comp_recipient,
            created_at: row.created_at,
            updated_at: row.updated_at,
            charge_attempt: u32::try_from(row.charge_attempt)
                .map_err(|_| corrupt("charge_attempt"))?,
            method_digest: match row.method_digest {
                Some(bytes) => Some(bytes.try_into().map_err(|_| corrupt("method_digest"))?),
                None => None,
            },
            declined: row.declined,
        })
    }
}

pub(crate) fn one(row: Option<PaymentRow>) -> Result<Option<Payment>, Error> {
    row.map(Payment::try_from).transpose()
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The payment for hold `key`.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn by_hold_key(conn: &mut PgConnection, key: HoldKey) -> Result<Option<Payment>, Error> {
    one(
        sqlx::query_file_as!(PaymentRow, "src/store/sql/by_hold_key.sql", key.uuid())
            .fetch_optional(&mut *conn)
            .await?,
    )
}

/// The payment `id`.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<Payment>, Error> {
    one(sqlx::query_as!(
        PaymentRow,
        r#"SELECT payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined
           FROM payments.payments
           WHERE payment_id = $1"#,
        id,
    )
    .fetch_optional(&mut *conn)
    .await?)
}

/// A page position: the last order of the previous page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Its `created_at`.
    pub created_at: DateTime<Utc>,
    /// Its id (ties broken by id, descending).
    pub id: Uuid,
}

/// The fan's payments, newest first, after `after`, at most `limit`.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn list_for_fan(
    conn: &mut PgConnection,
    fan: &str,
    event: Option<i64>,
    after: Option<Cursor>,
    limit: i64,
) -> Result<Vec<Payment>, Error> {
    let after_created = after.map(|c| c.created_at);
    let after_id = after.map(|c| c.id);
    sqlx::query_as!(
        PaymentRow,
        r#"SELECT payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined
           FROM payments.payments
           WHERE fan_id = $1 AND ($2::bigint IS NULL OR event_id = $2)
               AND ($3::timestamptz IS NULL OR (created_at, payment_id) < ($3, $4))
           ORDER BY created_at DESC, payment_id DESC
           LIMIT $5"#,
        fan,
        event,
        after_created,
        after_id,
        limit,
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(Payment::try_from)
    .collect()
}
