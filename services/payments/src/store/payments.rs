//! Payment rows: the intent, reads, comps and a fan's list.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::leases::Lease;
use super::tickets::{BookedSeat, NewTickets};
use crate::domain::ticket_code::TicketSigner;
use crate::domain::{HoldKey, Money, Order, Payment, PaymentStatus, RefundReason};
use crate::error::Error;

stadium_db::text_enum!(PaymentStatus);
stadium_db::text_enum!(RefundReason);

/// A `payments.payments` row as every payment statement returns it (`currency` as
/// text); filled by `sqlx::query_as!`, whose column names must be these fields'.
#[derive(Debug)]
pub(super) struct PaymentRow {
    pub(super) payment_id: Uuid,
    pub(super) hold_key: Uuid,
    pub(super) event_id: i64,
    pub(super) fan_id: String,
    pub(super) amount_minor: i64,
    pub(super) currency: String,
    pub(super) status: PaymentStatus,
    pub(super) provider_charge_id: Option<String>,
    pub(super) refund_id: Option<Uuid>,
    pub(super) refund_reason: Option<RefundReason>,
    pub(super) refunded_minor: i64,
    pub(super) refunded_at: Option<DateTime<Utc>>,
    pub(super) comp_recipient: Option<String>,
    pub(super) created_at: DateTime<Utc>,
    pub(super) updated_at: DateTime<Utc>,
    pub(super) charge_attempt: i32,
    pub(super) method_digest: Option<Vec<u8>>,
    pub(super) declined: bool,
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

pub(super) fn one(row: Option<PaymentRow>) -> Result<Option<Payment>, Error> {
    row.map(Payment::try_from).transpose()
}

pub(super) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A payment intent to record.
#[derive(Debug, Clone)]
pub struct NewPayment {
    /// The new payment's id.
    pub id: Uuid,
    /// The hold it pays for (unique: the second intent for a hold is not recorded).
    pub hold_key: HoldKey,
    /// Catalog event id.
    pub event_id: i64,
    /// The paying fan.
    pub fan_id: String,
    /// The price.
    pub amount: Money,
    /// SHA-256 of the payment method the charge is asked with (`None` for a comp).
    pub method_digest: Option<[u8; 32]>,
}

/// Records the intent with a lease for the caller, unless the hold already has one:
/// one statement. Returns the recorded payment, `None` when another intent for the hold
/// was there first.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn insert_intent<'e>(
    db: impl PgExecutor<'e>,
    new: &NewPayment,
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    one(sqlx::query_file_as!(
        PaymentRow,
        "src/store/sql/insert_intent.sql",
        new.id,
        new.hold_key.uuid(),
        new.event_id,
        new.fan_id,
        new.amount.amount_minor,
        new.amount.currency,
        lease.owner,
        millis(lease.ttl),
        new.method_digest.as_ref().map(<[u8; 32]>::as_slice),
    )
    .fetch_optional(db)
    .await?)
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

/// Records a comp (price 0, status comp) with its tickets, in one statement. Returns
/// the comp's order.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn insert_comp<'e>(
    db: impl PgExecutor<'e>,
    new: &NewPayment,
    recipient: &str,
    seats: &[BookedSeat],
    signer: &TicketSigner,
) -> Result<Order, Error> {
    let tickets = NewTickets::sign(new.event_id, seats, signer);
    // The tickets are issued as `statements::CAPTURE` issues a capture's.
    let row = sqlx::query_as!(
        PaymentRow,
        r#"WITH p AS (
               INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id,
                   amount_minor, currency, status, comp_recipient)
               VALUES ($1, $2, $3, $4, 0, $5, 'comp', $6)
               RETURNING *
           ),
           issued AS (
               INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id,
                   seat_id, fan_id, code)
               SELECT t.ticket_id, p.payment_id, p.event_id, t.section_id, t.seat_id,
                   p.fan_id, t.code
               FROM p, unnest($7::uuid[], $8::bigint[], $9::bigint[], $10::text[])
                   AS t(ticket_id, section_id, seat_id, code)
           )
           SELECT payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined
           FROM p"#,
        new.id,
        new.hold_key.uuid(),
        new.event_id,
        new.fan_id,
        new.amount.currency,
        recipient,
        tickets.ids(),
        tickets.section_ids(),
        tickets.seat_ids(),
        tickets.codes(),
    )
    .fetch_one(db)
    .await?;
    Ok(Order {
        payment: Payment::try_from(row)?,
        tickets: tickets.issued(),
    })
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
