//! Tickets: issued with a capture or a comp, voided with a refund.

use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use crate::domain::ticket_code::{TicketClaims, TicketSigner};
use crate::domain::{Payment, Ticket};
use crate::error::Error;

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

/// A booked seat to issue a ticket for.
#[derive(Debug, Clone, Copy)]
pub struct BookedSeat {
    /// Catalog section id.
    pub section_id: i64,
    /// Catalog seat id.
    pub seat_id: i64,
}

pub(super) async fn insert_tickets(
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
