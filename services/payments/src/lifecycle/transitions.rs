//! The statements that change a payment's state, one per transition, each conditional
//! on the state it leaves (or, for a new row, on the hold having none), so of two
//! drivers racing to move one payment exactly one moves it and the other sees zero rows.
//! Time is the database's clock. The transitions and their conditions are tabled in
//! `docs/payments.md`.

use std::time::Duration;

use sqlx::{PgConnection, PgExecutor};
use uuid::Uuid;

use super::lease::Lease;
use crate::domain::ticket_code::TicketSigner;
use crate::domain::{HoldKey, Money, Order, Payment, PaymentStatus, RefundReason};
use crate::error::Error;
use crate::provider::ProviderName;
use crate::store::{BookedSeat, NewTickets, PaymentRow, millis, one};

/// A payment intent to record.
#[derive(Debug, Clone)]
pub(super) struct NewPayment {
    /// The new payment's id.
    pub(super) id: Uuid,
    /// The hold it pays for (unique: the second intent for a hold is not recorded).
    pub(super) hold_key: HoldKey,
    /// Catalog event id.
    pub(super) event_id: i64,
    /// The paying fan (or a comp's recipient).
    pub(super) fan_id: String,
    /// The price.
    pub(super) amount: Money,
    /// SHA-256 of the payment method the charge is asked with (`None` for a comp).
    pub(super) method_digest: Option<[u8; 32]>,
}

/// [*] → pending: records the intent with a lease for the caller, unless the hold
/// already has a payment: one statement (`sql/insert_intent.sql`). Returns the recorded
/// payment, `None` when another intent for the hold was there first.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub(super) async fn insert_intent<'e>(
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

/// Records that payment `id` is charged through `provider`: one statement, run in the
/// intent's own transaction (the intent statement leaves the column's default, `sim`).
/// Runtime-checked SQL (`sqlx::query`), so the compile-time query data stays as it is.
///
/// # Errors
/// [`Error::Database`].
pub(super) async fn record_provider(
    conn: &mut PgConnection,
    id: Uuid,
    provider: ProviderName,
) -> Result<(), Error> {
    sqlx::query("UPDATE payments.payments SET provider = $2 WHERE payment_id = $1")
        .bind(id)
        .bind(provider.as_str())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// [*] → comp: records a comp (price 0) with its tickets, in one statement. Returns the
/// comp's order.
///
/// # Errors
/// [`Error::Database`] (23505 on `payments_hold_key_key` when the hold already has a
/// payment); [`Error::CorruptRow`].
pub(super) async fn insert_comp<'e>(
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

/// pending or failed → captured, with one ticket per seat, in one statement
/// (`sql/capture.sql`); the lease is cleared. Returns the captured order, or `None`
/// (and writes nothing) when the payment was in neither state.
///
/// A `failed` payment is captured too: only a payment the provider charged reaches
/// here, so `failed` then means the reconciler gave it up while the charge was still
/// landing, and the booked seats and the money belong together.
///
/// # Errors
/// [`Error::Database`] (e.g. 23505 on `tickets_one_valid_per_seat` if a seat somehow
/// still has a valid ticket: the statement then writes nothing).
pub(super) async fn capture<'e>(
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

/// Any of `from` → refund_pending with `reason`, the tickets voided, the lease taken
/// for the caller, in the caller's transaction. The conditional update decides: of two
/// concurrent requests exactly one moves the payment. Returns the payment when this
/// call moved it.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub(super) async fn begin_refund(
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
        void_tickets(conn, id).await?;
    }
    Ok(moved)
}

/// Voids payment `id`'s valid tickets; answers how many were valid.
///
/// # Errors
/// [`Error::Database`].
pub(super) async fn void_tickets(conn: &mut PgConnection, id: Uuid) -> Result<u64, Error> {
    let done = sqlx::query!(
        "UPDATE payments.tickets SET status = 'void' WHERE payment_id = $1 AND status = 'valid'",
        id,
    )
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

/// refund_pending → refunded (the whole amount), the lease cleared, in the caller's
/// transaction. Returns false when the payment was not refund_pending.
///
/// # Errors
/// [`Error::Database`].
pub(super) async fn finish_refund(
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

/// pending, or failed without a decline (abandoned) → failed because the provider
/// declined the charge (nothing charged; the fan may try another method, see
/// [`next_attempt`]); the lease cleared. Returns false when it was neither.
///
/// # Errors
/// [`Error::Database`].
pub(super) async fn mark_declined(conn: &mut PgConnection, id: Uuid) -> Result<bool, Error> {
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

/// pending → failed (abandoned: not declined) when the payment is older than `age` (a
/// confirm that died before charging); the lease cleared. Returns whether it moved.
///
/// # Errors
/// [`Error::Database`].
pub(super) async fn mark_abandoned(
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

/// failed (declined, on attempt `from`) → pending on attempt `from + 1`: a declined
/// payment's next charge attempt, with the payment method whose SHA-256 is
/// `method_digest` and the lease taken for the caller. `None` when another request
/// moved it first.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`].
pub(super) async fn next_attempt(
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
