//! Reading orders, ticket verification, and the box office's entry points: refunds
//! and comps (carried out by [`crate::lifecycle`]).

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::PaymentsService;
use crate::domain::ticket_code::{TicketClaims, TicketCodeError};
use crate::domain::{HoldKey, Order, RefundReason};
use crate::error::Error;
use crate::lifecycle::CompRequest;
use crate::store::{self, Cursor};

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
        match payment {
            Some(payment) if fan.is_none_or(|f| f == payment.fan_id) => {
                let tickets = store::tickets(&mut conn, payment.id).await?;
                Ok(Order { payment, tickets })
            }
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

    /// Refunds a paid order for the box office and releases its seats: see
    /// [`crate::lifecycle::Lifecycle::refund`].
    ///
    /// # Errors
    /// As [`crate::lifecycle::Lifecycle::refund`].
    pub async fn refund_order(&self, id: Uuid, reason: RefundReason) -> Result<Order, Error> {
        self.lifecycle.refund(id, reason).await
    }

    /// Books a comp for the box office (its `admin_token`): see
    /// [`crate::lifecycle::Lifecycle::comp`].
    ///
    /// # Errors
    /// As [`crate::lifecycle::Lifecycle::comp`].
    pub async fn issue_comp(&self, admin_token: &str, comp: CompRequest) -> Result<Order, Error> {
        self.lifecycle.comp(admin_token, comp).await
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
        match self.signer().verifier().verify(code) {
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
