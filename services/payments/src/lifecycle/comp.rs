//! A comp: seats booked at price 0 for a named recipient ([*] → comp). Nothing leaves
//! `comp`: no charge was made, so there is nothing to refund or capture.

use uuid::Uuid;

use super::Lifecycle;
use super::transitions::{self, NewPayment};
use crate::domain::{Money, Order};
use crate::error::Error;
use crate::store::{self, BookedSeat};

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

impl Lifecycle {
    /// Books `comp` through holds' `ClaimComp` with the box office's `admin_token`, and
    /// records it as an order at price 0 with tickets. No order without seats and no
    /// seats without an order: when the record fails, the seats are released again.
    ///
    /// # Errors
    /// [`Error::Holds`] with holds' refusal (e.g. `SEAT_TAKEN`); [`Error::Dependency`];
    /// [`Error::Database`] (the comp's seats are then released again).
    pub async fn comp(&self, admin_token: &str, comp: CompRequest) -> Result<Order, Error> {
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
            transitions::insert_comp(&mut *conn, &new, &comp.recipient, &seats, &self.signer).await
        }
        .await;
        match recorded {
            Ok(order) => Ok(order),
            Err(error) => {
                if let Err(release) = self.holds.release(hold.key, "comp not recorded").await {
                    tracing::error!(hold_key = %hold.key, %release, "comp seats booked without an order");
                }
                Err(error)
            }
        }
    }
}
