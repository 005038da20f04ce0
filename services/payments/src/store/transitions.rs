//! The state changes of a payment, each conditional on the state it leaves, so of
//! two paths racing to move one payment exactly one moves it.

use std::time::Duration;

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::leases::Lease;
use super::payments::{PaymentRow, millis, one};
use super::tickets::{BookedSeat, NewTickets};
use crate::domain::ticket_code::TicketSigner;
use crate::domain::{Order, Payment, PaymentStatus, RefundReason};
use crate::error::Error;

/// Pending → captured, with one ticket per seat, in one statement. Returns the
/// captured order, or `None` (and writes nothing) when the payment was no longer
/// pending.
///
/// # Errors
/// [`Error::Database`] (e.g. 23505 on `tickets_one_valid_per_seat` if a seat somehow
/// still has a valid ticket: the statement then writes nothing).
///
/// A `failed` payment is captured too: only a payment the provider charged reaches
/// here, so `failed` then means the reconciler gave it up while the charge was still
/// landing, and the booked seats and the money belong together.
pub async fn capture<'e>(
    db: impl PgExecutor<'e>,
    payment: &Payment,
    charge_id: &str,
    seats: &[BookedSeat],
    signer: &TicketSigner,
) -> Result<Option<Order>, Error> {
    let tickets = NewTickets::sign(payment.event_id, seats, signer);
    let row = sqlx::query_file_as!(
        PaymentRow,
        "src/store/sql/capture.sql",
        payment.id,
        charge_id,
        tickets.ids(),
        tickets.section_ids(),
        tickets.seat_ids(),
        tickets.codes(),
    )
    .fetch_optional(db)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(Order {
        payment: Payment::try_from(row)?,
        tickets: tickets.issued(),
    }))
}

/// Any of `from` → refund_pending with `reason`, the tickets voided, under the caller's lease,
/// in the caller's transaction. The conditional update decides: of two concurrent
/// requests exactly one moves the payment. Returns the payment when this call moved it.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn begin_refund(
    conn: &mut PgConnection,
    id: Uuid,
    from: &[PaymentStatus],
    reason: RefundReason,
    charge_id: Option<&str>,
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    let from: Vec<&str> = from.iter().map(|s| s.as_str()).collect();
    let moved = one(sqlx::query_as!(
        PaymentRow,
        r#"UPDATE payments.payments
           SET status = 'refund_pending', refund_reason = $3, refund_id = $4,
               provider_charge_id = COALESCE($5, provider_charge_id),
               lease_owner = $6, lease_until = now() + $7::bigint * interval '1 millisecond',
               updated_at = now()
           WHERE payment_id = $1 AND status = ANY($2::text[])
           RETURNING payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined"#,
        id,
        // `as`: sqlx's parameter type overrides; the reason binds as its text.
        &from[..] as &[&str],
        reason as RefundReason,
        Uuid::new_v4(),
        charge_id,
        lease.owner,
        millis(lease.ttl),
    )
    .fetch_optional(&mut *conn)
    .await?)?;
    if moved.is_some() {
        sqlx::query!(
            "UPDATE payments.tickets SET status = 'void' WHERE payment_id = $1 AND status = 'valid'",
            id,
        )
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
    let moved = sqlx::query!(
        "UPDATE payments.payments
         SET status = 'refunded', refunded_minor = amount_minor, provider_refund_id = $2,
             refunded_at = now(), lease_owner = NULL, lease_until = NULL, updated_at = now()
         WHERE payment_id = $1 AND status = 'refund_pending'",
        id,
        provider_refund_id,
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

/// Pending (or abandoned) → failed because the provider declined the charge (nothing
/// charged; the fan may try another method, see [`next_attempt`]). Returns false when
/// it was neither.
///
/// # Errors
/// [`Error::Database`].
pub async fn mark_declined(conn: &mut PgConnection, id: Uuid) -> Result<bool, Error> {
    let moved = sqlx::query!(
        "UPDATE payments.payments
         SET status = 'failed', declined = true, lease_owner = NULL, lease_until = NULL,
             updated_at = now()
         WHERE payment_id = $1 AND (status = 'pending' OR (status = 'failed' AND NOT declined))",
        id,
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
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
    let moved = sqlx::query!(
        "UPDATE payments.payments
         SET status = 'failed', lease_owner = NULL, lease_until = NULL, updated_at = now()
         WHERE payment_id = $1 AND status = 'pending'
             AND created_at <= now() - $2::bigint * interval '1 millisecond'",
        id,
        millis(age),
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

/// A declined payment's next charge attempt, with the payment method whose SHA-256 is
/// `method_digest` and a lease for the caller: failed (declined, on attempt `from`) →
/// pending on attempt `from + 1`. `None` when another request moved it first.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub async fn next_attempt(
    conn: &mut PgConnection,
    id: Uuid,
    from: u32,
    method_digest: &[u8; 32],
    lease: Lease,
) -> Result<Option<Payment>, Error> {
    one(sqlx::query_as!(
        PaymentRow,
        r#"UPDATE payments.payments
           SET status = 'pending', declined = false, charge_attempt = charge_attempt + 1,
               method_digest = $3, lease_owner = $4,
               lease_until = now() + $5::bigint * interval '1 millisecond',
               attempts = attempts + 1, updated_at = now()
           WHERE payment_id = $1 AND status = 'failed' AND declined AND charge_attempt = $2
           RETURNING payment_id, hold_key, event_id, fan_id, amount_minor,
               currency::text AS "currency!", status AS "status: PaymentStatus",
               provider_charge_id, refund_id, refund_reason AS "refund_reason: RefundReason",
               refunded_minor, refunded_at, comp_recipient, created_at, updated_at,
               charge_attempt, method_digest, declined"#,
        id,
        i32::try_from(from).unwrap_or(i32::MAX),
        method_digest.as_slice(),
        lease.owner,
        millis(lease.ttl),
    )
    .fetch_optional(&mut *conn)
    .await?)
}
