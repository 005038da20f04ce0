//! Reading orders, box-office refunds and comps, ticket verification.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::PaymentsService;
use crate::domain::ticket_code::{TicketClaims, TicketCodeError};
use crate::domain::{HoldKey, Money, Order, PaymentStatus, RefundReason};
use crate::error::Error;
use crate::lifecycle::{self, Lease, NewPayment};
use crate::store::{self, BookedSeat, Cursor};

/// Which order, and who asks.
#[derive(Debug, Clone, Copy)]
pub enum OrderKey {
    /// By order (payment) id.
    Id(Uuid),
    /// By the hold it paid for.
    Hold(HoldKey),
}

/// A page of a fan's orders.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    /// At most this many (1..=500).
    pub size: u32,
    /// After this position (from the previous page).
    pub after: Option<Cursor>,
    /// Only this event.
    pub event: Option<i64>,
}

/// A page of orders and where the next starts.
#[derive(Debug, Clone)]
pub struct OrderPage {
    /// Newest first.
    pub orders: Vec<Order>,
    /// The position after the last order, when more may follow.
    pub next: Option<Cursor>,
}

/// A comp to book.
#[derive(Debug, Clone)]
pub struct CompRequest {
    /// Catalog event id.
    pub event_id: i64,
    /// Catalog section id.
    pub section_id: i64,
    /// Seats, as the box office sent them.
    pub seat_ids: Vec<i64>,
    /// Who receives it.
    pub recipient: String,
}

impl PaymentsService {
    /// One order. `fan` restricts it to that fan's own (`None`: an admin reads any).
    ///
    /// # Errors
    /// [`Error::OrderNotFound`] (absent, or another fan's); [`Error::Database`].
    pub async fn get_order(&self, key: OrderKey, fan: Option<&str>) -> Result<Order, Error> {
        let mut conn = self.pool.acquire().await?;
        let payment = match key {
            OrderKey::Id(id) => store::by_id(&mut conn, id).await?,
            OrderKey::Hold(key) => store::by_hold_key(&mut conn, key).await?,
        };
        drop(conn);
        match payment {
            Some(p) if fan.is_none_or(|f| f == p.fan_id) => self.order(p).await,
            _ => Err(Error::OrderNotFound),
        }
    }

    /// The fan's orders, newest first.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn list_orders(&self, fan: &str, page: PageRequest) -> Result<OrderPage, Error> {
        let mut conn = self.pool.acquire().await?;
        let limit = i64::from(page.size.clamp(1, 500));
        let payments = store::list_for_fan(&mut conn, fan, page.event, page.after, limit).await?;
        let next = (payments.len() as i64 == limit)
            .then(|| payments.last())
            .flatten()
            .map(|p| Cursor {
                created_at: p.created_at,
                id: p.id,
            });
        let mut orders = Vec::with_capacity(payments.len());
        for payment in payments {
            let tickets = store::tickets(&mut conn, payment.id).await?;
            orders.push(Order { payment, tickets });
        }
        Ok(OrderPage { orders, next })
    }

    /// Refunds a paid order for the box office and releases its seats. The conditional
    /// `captured → refund_pending` update decides, so two presses refund once; a
    /// repeated request returns the existing refund.
    ///
    /// # Errors
    /// [`Error::OrderNotFound`]; [`Error::NotRefundable`] (pending, failed, comp);
    /// [`Error::InProgress`]; as [`PaymentsService::finish_refund`].
    pub async fn refund_order(&self, id: Uuid) -> Result<Order, Error> {
        let payment = self.payment_by_id(id).await?.ok_or(Error::OrderNotFound)?;
        match payment.status {
            PaymentStatus::Captured => {
                let lease = Lease::new(self.settings.lease);
                self.refund_from(
                    id,
                    &[PaymentStatus::Captured],
                    RefundReason::BoxOffice,
                    None,
                    lease,
                    None,
                )
                .await
            }
            PaymentStatus::Refunded | PaymentStatus::RefundPending => {
                self.await_outcome(payment, None).await
            }
            other => Err(Error::NotRefundable(other.as_str())),
        }
    }

    /// Books `comp` through holds' `ClaimComp` with the box office's `admin_token`, and
    /// records it as an order at price 0 with tickets.
    ///
    /// # Errors
    /// [`Error::Holds`] with holds' refusal (e.g. `SEAT_TAKEN`); [`Error::Dependency`];
    /// [`Error::Database`] (the comp's seats are then released again).
    pub async fn issue_comp(&self, admin_token: &str, comp: CompRequest) -> Result<Order, Error> {
        let hold = self
            .holds
            .claim_comp(
                admin_token,
                comp.event_id,
                comp.section_id,
                &comp.seat_ids,
                &comp.recipient,
            )
            .await?;
        let recorded = async {
            let mut conn = self.pool.acquire().await?;
            let currency = store::event_currency(&mut conn, hold.event_id)
                .await?
                .ok_or_else(|| Error::CorruptRow(format!("event {} vanished", hold.event_id)))?;
            let new = NewPayment {
                id: Uuid::new_v4(),
                hold_key: hold.key,
                event_id: hold.event_id,
                fan_id: comp.recipient.clone(),
                amount: Money {
                    amount_minor: 0,
                    currency,
                },
                method_digest: None,
            };
            let seats: Vec<BookedSeat> = hold
                .seat_ids
                .iter()
                .map(|&seat_id| BookedSeat {
                    section_id: hold.section_id,
                    seat_id,
                })
                .collect();
            lifecycle::insert_comp(&mut *conn, &new, &comp.recipient, &seats, &self.signer).await
        }
        .await;
        match recorded {
            Ok(order) => Ok(order),
            Err(error) => {
                // No order without seats and no seats without an order.
                if let Err(release) = self.holds.release(hold.key, "comp not recorded").await {
                    tracing::error!(hold_key = %hold.key, %release, "comp seats booked without an order");
                }
                Err(error)
            }
        }
    }

    /// Checks a ticket code: its signature (offline-verifiable), then whether the ticket
    /// is still valid (not voided by a refund). Returns the claims, whether the
    /// signature verified, and whether the ticket is valid.
    ///
    /// # Errors
    /// [`Error::InvalidField`] for a malformed code; [`Error::Database`].
    pub async fn verify_ticket(
        &self,
        code: &str,
    ) -> Result<(Option<TicketClaims>, bool, bool), Error> {
        match self.signer.verifier().verify(code) {
            Ok(claims) => {
                let mut conn = self.pool.acquire().await?;
                let valid = store::ticket_valid(&mut conn, claims.ticket_id)
                    .await?
                    .unwrap_or(false);
                Ok((Some(claims), true, valid))
            }
            Err(TicketCodeError::BadSignature) => Ok((None, false, false)),
            Err(error @ TicketCodeError::Malformed(_)) => Err(Error::invalid("ticket_code", error)),
        }
    }
}

/// A cursor from its page-token text `<unix micros>_<uuid>`.
pub fn parse_cursor(token: &str) -> Option<Cursor> {
    let (micros, id) = token.split_once('_')?;
    let created_at = DateTime::<Utc>::from_timestamp_micros(micros.parse().ok()?)?;
    Some(Cursor {
        created_at,
        id: Uuid::parse_str(id).ok()?,
    })
}

/// The page-token text of a cursor.
pub fn format_cursor(cursor: &Cursor) -> String {
    format!("{}_{}", cursor.created_at.timestamp_micros(), cursor.id)
}
