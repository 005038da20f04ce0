//! Tickets: issued with a capture or a comp, voided with a refund.

use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use crate::domain::Ticket;
use crate::domain::ticket_code::{TicketClaims, TicketSigner};
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

/// The tickets of one payment about to be issued: an id and a signed code per seat.
#[derive(Debug)]
pub(super) struct NewTickets {
    ids: Vec<Uuid>,
    section_ids: Vec<i64>,
    seat_ids: Vec<i64>,
    codes: Vec<String>,
}

impl NewTickets {
    /// One new ticket per seat of `event_id`, its code signed by `signer`.
    pub(super) fn sign(event_id: i64, seats: &[BookedSeat], signer: &TicketSigner) -> Self {
        let mut new = Self {
            ids: Vec::with_capacity(seats.len()),
            section_ids: Vec::with_capacity(seats.len()),
            seat_ids: Vec::with_capacity(seats.len()),
            codes: Vec::with_capacity(seats.len()),
        };
        for seat in seats {
            let id = Uuid::new_v4();
            new.codes.push(signer.sign(&TicketClaims {
                ticket_id: id,
                event_id,
                section_id: seat.section_id,
                seat_id: seat.seat_id,
            }));
            new.ids.push(id);
            new.section_ids.push(seat.section_id);
            new.seat_ids.push(seat.seat_id);
        }
        new
    }

    /// Binds the four arrays, in the order of [`super::statements::with_tickets`]'s
    /// parameters.
    pub(super) fn bind<'q, O>(
        &'q self,
        query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    ) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
        query
            .bind(&self.ids)
            .bind(&self.section_ids)
            .bind(&self.seat_ids)
            .bind(&self.codes)
    }

    /// The tickets as issued (valid), by seat.
    pub(super) fn issued(self) -> Vec<Ticket> {
        let mut tickets: Vec<Ticket> = self
            .ids
            .into_iter()
            .zip(self.section_ids)
            .zip(self.seat_ids)
            .zip(self.codes)
            .map(|(((id, section_id), seat_id), code)| Ticket {
                id,
                section_id,
                seat_id,
                code,
                valid: true,
            })
            .collect();
        tickets.sort_by_key(|t| t.seat_id);
        tickets
    }
}
