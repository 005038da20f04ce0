//! Payments, tickets, notices and prices.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use crate::domain::ticket_code::{TicketClaims, TicketSigner};
use crate::domain::{HoldKey, Money, Payment, PaymentStatus, RefundReason, Ticket};
use crate::error::Error;

const PAYMENT_COLUMNS: &str = "payment_id, hold_key, event_id, fan_id, amount_minor, \
     currency::text AS currency, status, provider_charge_id, refund_id, refund_reason, refunded_minor, \
     refunded_at, comp_recipient, created_at, updated_at";

#[derive(Debug, FromRow)]
struct PaymentRow {
    payment_id: Uuid,
    hold_key: Uuid,
    event_id: i64,
    fan_id: String,
    amount_minor: i64,
    currency: String,
    status: String,
    provider_charge_id: Option<String>,
    refund_id: Option<Uuid>,
    refund_reason: Option<String>,
    refunded_minor: i64,
    refunded_at: Option<DateTime<Utc>>,
    comp_recipient: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<PaymentRow> for Payment {
    type Error = Error;

    fn try_from(row: PaymentRow) -> Result<Self, Error> {
        let corrupt = |what: &str| Error::CorruptRow(format!("payment {}: {what}", row.payment_id));
        let status = PaymentStatus::from_db(&row.status).ok_or_else(|| corrupt("status"))?;
        let refund_reason = match &row.refund_reason {
            Some(r) => Some(RefundReason::from_db(r).ok_or_else(|| corrupt("refund_reason"))?),
            None => None,
        };
        Ok(Payment {
            id: row.payment_id,
            hold_key: HoldKey::from(row.hold_key),
            event_id: row.event_id,
            fan_id: row.fan_id,
            amount: Money {
                amount_minor: row.amount_minor,
                currency: row.currency.trim().to_owned(),
            },
            status,
            provider_charge_id: row.provider_charge_id,
            refund_id: row.refund_id,
            refund_reason,
            refunded_minor: row.refunded_minor,
            refunded_at: row.refunded_at,
            comp_recipient: row.comp_recipient,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

fn one(row: Option<PaymentRow>) -> Result<Option<Payment>, Error> {
    row.map(Payment::try_from).transpose()
}

fn millis(d: Duration) -> i64 {
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
}

/// A lease on an unfinished payment: who drives it, until when (database clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The lease holder's random token.
    pub owner: Uuid,
    /// How long the lease lasts from when it is taken.
    pub ttl: Duration,
}

impl Lease {
    /// A fresh lease token lasting `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            owner: Uuid::new_v4(),
            ttl,
        }
    }
}

/// Records the intent with a lease for the caller, unless the hold already has one.
/// Returns whether this call recorded it.
///
/// # Errors
/// [`Error::Database`].
pub async fn insert_intent(
    conn: &mut PgConnection,
    new: &NewPayment,
    lease: Lease,
) -> Result<bool, Error> {
    let inserted = sqlx::query(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor, \
             currency, status, lease_owner, lease_until, attempts) \
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, now() + $8 * interval '1 millisecond', 1) \
         ON CONFLICT (hold_key) DO NOTHING",
    )
    .bind(new.id)
    .bind(new.hold_key.uuid())
    .bind(new.event_id)
    .bind(&new.fan_id)
    .bind(new.amount.amount_minor)
    .bind(&new.amount.currency)
    .bind(lease.owner)
    .bind(millis(lease.ttl))
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

/// The payment for hold `key`.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn by_hold_key(conn: &mut PgConnection, key: HoldKey) -> Result<Option<Payment>, Error> {
    let sql = format!("SELECT {PAYMENT_COLUMNS} FROM payments.payments WHERE hold_key = $1");
    one(sqlx::query_as::<_, PaymentRow>(&sql)
        .bind(key.uuid())
        .fetch_optional(&mut *conn)
        .await?)
}

/// The payment `id`.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn by_id(conn: &mut PgConnection, id: Uuid) -> Result<Option<Payment>, Error> {
    let sql = format!("SELECT {PAYMENT_COLUMNS} FROM payments.payments WHERE payment_id = $1");
    one(sqlx::query_as::<_, PaymentRow>(&sql)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?)
}

#[derive(Debug, FromRow)]
struct TicketRow {
    ticket_id: Uuid,
    section_id: i64,
    seat_id: i64,
    code: String,
    status: String,
}

/// The tickets of payment `id`, by seat.
///
/// # Errors
/// [`Error::Database`].
pub async fn tickets(conn: &mut PgConnection, id: Uuid) -> Result<Vec<Ticket>, Error> {
    let rows = sqlx::query_as::<_, TicketRow>(
        "SELECT ticket_id, section_id, seat_id, code, status FROM payments.tickets \
         WHERE payment_id = $1 ORDER BY seat_id",
    )
    .bind(id)
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Ticket {
            id: r.ticket_id,
            section_id: r.section_id,
            seat_id: r.seat_id,
            code: r.code,
            valid: r.status == "valid",
        })
        .collect())
}

/// Whether ticket `id` exists and is valid (not voided by a refund).
///
/// # Errors
/// [`Error::Database`].
pub async fn ticket_valid(conn: &mut PgConnection, id: Uuid) -> Result<Option<bool>, Error> {
    let status: Option<String> =
        sqlx::query_scalar("SELECT status FROM payments.tickets WHERE ticket_id = $1")
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(status.map(|s| s == "valid"))
}

/// Takes the lease on an unfinished payment if nobody holds an unexpired one; returns
/// the payment when taken.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn take_lease(
    conn: &mut PgConnection,
    id: Uuid,
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    let sql = format!(
        "UPDATE payments.payments \
         SET lease_owner = $2, lease_until = now() + $3 * interval '1 millisecond', \
             attempts = attempts + 1 \
         WHERE payment_id = $1 AND status IN ('pending', 'refund_pending') \
           AND (lease_until IS NULL OR lease_until <= now()) \
         RETURNING {PAYMENT_COLUMNS}"
    );
    one(sqlx::query_as::<_, PaymentRow>(&sql)
        .bind(id)
        .bind(lease.owner)
        .bind(millis(lease.ttl))
        .fetch_optional(&mut *conn)
        .await?)
}

/// Gives the lease back early (after a failure the caller cannot finish), so a retry or
/// the reconciler may take over at once. Only the holder's own lease is released.
///
/// # Errors
/// [`Error::Database`].
pub async fn release_lease(conn: &mut PgConnection, id: Uuid, lease: Lease) -> Result<(), Error> {
    sqlx::query(
        "UPDATE payments.payments SET lease_until = NULL \
         WHERE payment_id = $1 AND lease_owner = $2",
    )
    .bind(id)
    .bind(lease.owner)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Unfinished payments nobody holds a lease on, oldest first (the reconciler's scan).
///
/// # Errors
/// [`Error::Database`].
pub async fn unfinished(conn: &mut PgConnection, limit: i64) -> Result<Vec<Uuid>, Error> {
    Ok(sqlx::query_scalar(
        "SELECT payment_id FROM payments.payments \
         WHERE status IN ('pending', 'refund_pending') \
           AND (lease_until IS NULL OR lease_until <= now()) \
         ORDER BY updated_at LIMIT $1",
    )
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?)
}

/// A provider notice to mark as applied, in the same transaction as what it changed.
#[derive(Debug, Clone)]
pub struct NoticeMark {
    /// The provider's notice id.
    pub notice_id: String,
    /// `charge_succeeded`, `charge_failed` or `refund_succeeded`.
    pub kind: &'static str,
    /// The notice's idempotency key.
    pub idempotency_key: String,
}

/// Records that a notice was applied with `outcome`; a second record of the same id is
/// a no-op.
///
/// # Errors
/// [`Error::Database`].
pub async fn mark_notice(
    conn: &mut PgConnection,
    mark: &NoticeMark,
    payment: Option<Uuid>,
    outcome: &str,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO payments.provider_notices (notice_id, kind, idempotency_key, payment_id, outcome) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (notice_id) DO NOTHING",
    )
    .bind(&mark.notice_id)
    .bind(mark.kind)
    .bind(&mark.idempotency_key)
    .bind(payment)
    .bind(outcome)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether notice `id` was already applied.
///
/// # Errors
/// [`Error::Database`].
pub async fn notice_seen(conn: &mut PgConnection, id: &str) -> Result<bool, Error> {
    Ok(
        sqlx::query_scalar::<_, i32>(
            "SELECT 1 FROM payments.provider_notices WHERE notice_id = $1",
        )
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .is_some(),
    )
}

/// A booked seat to issue a ticket for.
#[derive(Debug, Clone, Copy)]
pub struct BookedSeat {
    /// Catalog section id.
    pub section_id: i64,
    /// Catalog seat id.
    pub seat_id: i64,
}

async fn insert_tickets(
    conn: &mut PgConnection,
    payment: &Payment,
    seats: &[BookedSeat],
    signer: &TicketSigner,
) -> Result<(), Error> {
    for seat in seats {
        let id = Uuid::new_v4();
        let code = signer.sign(&TicketClaims {
            ticket_id: id,
            event_id: payment.event_id,
            section_id: seat.section_id,
            seat_id: seat.seat_id,
        });
        sqlx::query(
            "INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id, seat_id, \
                 fan_id, code) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(payment.id)
        .bind(payment.event_id)
        .bind(seat.section_id)
        .bind(seat.seat_id)
        .bind(&payment.fan_id)
        .bind(code)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Pending → captured, with one ticket per seat, in the caller's transaction. Returns
/// false (and writes nothing) when the payment was no longer pending.
///
/// # Errors
/// [`Error::Database`] (e.g. 23505 on `tickets_one_valid_per_seat` if a seat somehow
/// still has a valid ticket: the transaction must then roll back).
pub async fn capture(
    conn: &mut PgConnection,
    payment: &Payment,
    charge_id: &str,
    seats: &[BookedSeat],
    signer: &TicketSigner,
) -> Result<bool, Error> {
    let moved = sqlx::query(
        "UPDATE payments.payments SET status = 'captured', provider_charge_id = $2, \
             lease_owner = NULL, lease_until = NULL, updated_at = now() \
         WHERE payment_id = $1 AND status = 'pending'",
    )
    .bind(payment.id)
    .bind(charge_id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if moved != 1 {
        return Ok(false);
    }
    insert_tickets(conn, payment, seats, signer).await?;
    Ok(true)
}

/// `from` → refund_pending with `reason`, the tickets voided, under the caller's lease,
/// in the caller's transaction. The conditional update decides: of two concurrent
/// requests exactly one moves the payment. Returns the payment when this call moved it.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn begin_refund(
    conn: &mut PgConnection,
    id: Uuid,
    from: PaymentStatus,
    reason: RefundReason,
    charge_id: Option<&str>,
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    let sql = format!(
        "UPDATE payments.payments SET status = 'refund_pending', refund_reason = $3, \
             refund_id = $4, provider_charge_id = COALESCE($5, provider_charge_id), \
             lease_owner = $6, lease_until = now() + $7 * interval '1 millisecond', \
             updated_at = now() \
         WHERE payment_id = $1 AND status = $2 \
         RETURNING {PAYMENT_COLUMNS}"
    );
    let moved = one(sqlx::query_as::<_, PaymentRow>(&sql)
        .bind(id)
        .bind(from.as_db())
        .bind(reason.as_db())
        .bind(Uuid::new_v4())
        .bind(charge_id)
        .bind(lease.owner)
        .bind(millis(lease.ttl))
        .fetch_optional(&mut *conn)
        .await?)?;
    if moved.is_some() {
        sqlx::query(
            "UPDATE payments.tickets SET status = 'void' WHERE payment_id = $1 AND status = 'valid'",
        )
        .bind(id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(moved)
}

/// refund_pending → refunded (the whole amount), in the caller's transaction. Returns
/// false when the payment was not refund_pending.
///
/// # Errors
/// [`Error::Database`].
pub async fn finish_refund(
    conn: &mut PgConnection,
    id: Uuid,
    provider_refund_id: &str,
) -> Result<bool, Error> {
    let moved = sqlx::query(
        "UPDATE payments.payments SET status = 'refunded', refunded_minor = amount_minor, \
             provider_refund_id = $2, refunded_at = now(), lease_owner = NULL, \
             lease_until = NULL, updated_at = now() \
         WHERE payment_id = $1 AND status = 'refund_pending'",
    )
    .bind(id)
    .bind(provider_refund_id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

/// Pending → failed (nothing charged). Returns false when it was not pending.
///
/// # Errors
/// [`Error::Database`].
pub async fn mark_failed(conn: &mut PgConnection, id: Uuid) -> Result<bool, Error> {
    let moved = sqlx::query(
        "UPDATE payments.payments SET status = 'failed', lease_owner = NULL, \
             lease_until = NULL, updated_at = now() \
         WHERE payment_id = $1 AND status = 'pending'",
    )
    .bind(id)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

/// Records a comp (price 0, status comp) with its tickets, in the caller's transaction.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn insert_comp(
    conn: &mut PgConnection,
    new: &NewPayment,
    recipient: &str,
    seats: &[BookedSeat],
    signer: &TicketSigner,
) -> Result<Payment, Error> {
    let sql = format!(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor, \
             currency, status, comp_recipient) \
         VALUES ($1, $2, $3, $4, 0, $5, 'comp', $6) RETURNING {PAYMENT_COLUMNS}"
    );
    let row = sqlx::query_as::<_, PaymentRow>(&sql)
        .bind(new.id)
        .bind(new.hold_key.uuid())
        .bind(new.event_id)
        .bind(&new.fan_id)
        .bind(&new.amount.currency)
        .bind(recipient)
        .fetch_one(&mut *conn)
        .await?;
    let payment = Payment::try_from(row)?;
    insert_tickets(conn, &payment, seats, signer).await?;
    Ok(payment)
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
    let sql = format!(
        "SELECT {PAYMENT_COLUMNS} FROM payments.payments \
         WHERE fan_id = $1 AND ($2::bigint IS NULL OR event_id = $2) \
           AND ($3::timestamptz IS NULL OR (created_at, payment_id) < ($3, $4)) \
         ORDER BY created_at DESC, payment_id DESC LIMIT $5"
    );
    sqlx::query_as::<_, PaymentRow>(&sql)
        .bind(fan)
        .bind(event)
        .bind(after.map(|c| c.created_at))
        .bind(after.map(|c| c.id))
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(Payment::try_from)
        .collect()
}

#[derive(Debug, FromRow)]
struct PriceRow {
    seat_id: i64,
    price_minor: Option<i64>,
    currency: Option<String>,
}

/// The price of `seats` of `event`: the sum of each seat's category price from the
/// catalog, all in one currency.
///
/// # Errors
/// [`Error::PriceMissing`] for a seat without a price (or not of the event's venue);
/// [`Error::CorruptRow`] for mixed currencies or an overflowing sum;
/// [`Error::Database`].
pub async fn price(conn: &mut PgConnection, event: i64, seats: &[i64]) -> Result<Money, Error> {
    let rows = sqlx::query_as::<_, PriceRow>(
        "SELECT s.seat_id, pc.price_minor, pc.currency::text AS currency \
         FROM unnest($2::bigint[]) AS s(seat_id) \
         LEFT JOIN catalog.event_seats es ON es.event_id = $1 AND es.seat_id = s.seat_id \
         LEFT JOIN catalog.price_categories pc \
                ON pc.event_id = es.event_id AND pc.category_code = es.category_code \
         ORDER BY s.seat_id",
    )
    .bind(event)
    .bind(seats)
    .fetch_all(&mut *conn)
    .await?;
    let mut total: i64 = 0;
    let mut currency: Option<String> = None;
    for row in rows {
        let (Some(price), Some(cur)) = (row.price_minor, row.currency) else {
            return Err(Error::PriceMissing(row.seat_id));
        };
        let cur = cur.trim().to_owned();
        match &currency {
            Some(c) if *c != cur => {
                return Err(Error::CorruptRow(format!(
                    "event {event}: mixed currencies"
                )));
            }
            _ => currency = Some(cur),
        }
        total = total
            .checked_add(price)
            .ok_or_else(|| Error::CorruptRow(format!("event {event}: price overflows")))?;
    }
    let currency = currency.ok_or_else(|| Error::invalid("seat_ids", "no seats"))?;
    Ok(Money {
        amount_minor: total,
        currency,
    })
}

/// The event's currency (for comps).
///
/// # Errors
/// [`Error::Database`]; `None` when no such event.
pub async fn event_currency(conn: &mut PgConnection, event: i64) -> Result<Option<String>, Error> {
    let currency: Option<String> =
        sqlx::query_scalar("SELECT currency::text FROM catalog.event_settings WHERE event_id = $1")
            .bind(event)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(currency.map(|c| c.trim().to_owned()))
}

/// Pending → failed when the payment is older than `age` (a confirm that died before
/// charging). Returns whether it moved.
///
/// # Errors
/// [`Error::Database`].
pub async fn mark_abandoned(
    conn: &mut PgConnection,
    id: Uuid,
    age: Duration,
) -> Result<bool, Error> {
    let moved = sqlx::query(
        "UPDATE payments.payments SET status = 'failed', lease_owner = NULL, \
             lease_until = NULL, updated_at = now() \
         WHERE payment_id = $1 AND status = 'pending' \
           AND created_at <= now() - $2 * interval '1 millisecond'",
    )
    .bind(id)
    .bind(millis(age))
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}
