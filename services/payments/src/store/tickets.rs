//! Tickets: issued with a capture or a comp, voided with a refund.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::domain::Ticket;
use crate::domain::ticket_code::{TicketClaims, TicketSigner};
use crate::error::Error;

/// The tickets of payment `id`, by seat.
///
/// # Errors
/// [`Error::Database`].
pub async fn tickets(conn: &mut PgConnection, id: Uuid) -> Result<Vec<Ticket>, Error> {
    let rows = sqlx::query!(
        r#"SELECT ticket_id, section_id, seat_id, code, status = 'valid' AS "valid!"
           FROM payments.tickets
           WHERE payment_id = $1
           ORDER BY seat_id"#,
        id,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Ticket {
            id: r.ticket_id,
            section_id: r.section_id,
            seat_id: r.seat_id,
            code: r.code,
            valid: r.valid,
        })
        .collect())
}

/// Whether ticket `id` exists and is valid (not voided by a refund).
///
/// # Errors
/// [`Error::Database`].
pub async fn ticket_valid(conn: &mut PgConnection, id: Uuid) -> Result<Option<bool>, Error> {
    Ok(sqlx::query_scalar!(
        r#"SELECT status = 'valid' AS "valid!" FROM payments.tickets WHERE ticket_id = $1"#,
        id,
    )
    .fetch_optional(&mut *conn)
    .await?)
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
pub(crate) struct NewTickets {
    ids: Vec<Uuid>,
    section_ids: Vec<i64>,
    seat_ids: Vec<i64>,
    codes: Vec<String>,
}

impl NewTickets {
    /// One new ticket per seat of `event_id`, its code signed by `signer`.
    pub(crate) fn sign(event_id: i64, seats: &[BookedSeat], signer: &TicketSigner) -> Self {
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

    /// The new ticket ids, one a seat (the first of the four arrays a statement issuing
    /// tickets binds, see [`super::statements::CAPTURE`]).
    pub(crate) fn ids(&self) -> &[Uuid] {
        &self.ids
    }

    /// The seats' section ids, in the same order.
    pub(crate) fn section_ids(&self) -> &[i64] {
        &self.section_ids
    }

    /// The seat ids, in the same order.
    pub(crate) fn seat_ids(&self) -> &[i64] {
        &self.seat_ids
    }

    /// The signed codes, in the same order.
    pub(crate) fn codes(&self) -> &[String] {
        &self.codes
    }

    /// The tickets as issued (valid), by seat.
    pub(crate) fn issued(self) -> Vec<Ticket> {
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
