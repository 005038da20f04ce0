//! Booking a charged payment through holds' `ConfirmHold`, then pending or failed →
//! captured with its tickets; or, when holds answers that the hold is gone, the refund.

use stadium_db::{RetryPolicy, retry_transient};

use super::transitions;
use super::{Lease, Lifecycle};
use crate::clients::holds::Booking;
use crate::domain::{Order, Payment, PaymentStatus, RefundReason};
use crate::error::Error;
use crate::store::{self, BookedSeat, NoticeMark};

impl Lifecycle {
    /// Books the hold of a charged payment: captured with tickets, or refunded when
    /// holds answers that the hold is gone (from pending, or from failed: the reconciler
    /// may have given the payment up while this charge was landing, and the money must
    /// still go back). `notice` is marked applied in the same transaction as the final
    /// state change. Holds unreachable, or the capture failing, leaves the payment
    /// where it was with the lease given back.
    ///
    /// # Errors
    /// [`Error::Dependency`] (holds); [`Error::Database`]; as
    /// [`Self::refund_from`].
    pub(super) async fn book(
        &self,
        payment: Payment,
        charge_id: &str,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Order, Error> {
        let booking = match self.holds.confirm(payment.hold_key, &payment.fan_id).await {
            Ok(booking) => booking,
            Err(error) => {
                self.give_back(payment.id, lease).await;
                return Err(error);
            }
        };
        match booking {
            Booking::Booked(hold) => {
                let seats: Vec<BookedSeat> = hold
                    .seat_ids
                    .iter()
                    .map(|&seat_id| BookedSeat {
                        section_id: hold.section_id,
                        seat_id,
                    })
                    .collect();
                let captured = retry_transient(
                    RetryPolicy::default(),
                    |_| {},
                    || self.capture(&payment, charge_id, &seats, notice),
                )
                .await;
                match captured {
                    Ok(Some(order)) => {
                        tracing::info!(payment_id = %payment.id, seats = seats.len(), "payment captured, tickets issued");
                        if let Some(admissions) = &self.admissions {
                            admissions.fan_done(payment.event_id, &payment.fan_id);
                        }
                        Ok(order)
                    }
                    Ok(None) => self.order_by_id(payment.id).await,
                    Err(error) => {
                        self.give_back(payment.id, lease).await;
                        Err(error)
                    }
                }
            }
            Booking::Gone => {
                tracing::info!(payment_id = %payment.id, "hold gone after the charge: refunding");
                self.refund_from(
                    payment.id,
                    &[PaymentStatus::Pending, PaymentStatus::Failed],
                    RefundReason::HoldExpired,
                    Some(charge_id),
                    lease,
                    notice,
                )
                .await
            }
        }
    }

    /// pending or failed → captured with tickets for `seats`: one statement, or with
    /// `notice` a transaction that also marks the notice applied. `None` when another
    /// path moved the payment first.
    async fn capture(
        &self,
        payment: &Payment,
        charge_id: &str,
        seats: &[BookedSeat],
        notice: Option<&NoticeMark>,
    ) -> Result<Option<Order>, Error> {
        let Some(mark) = notice else {
            return transitions::capture(&self.pool, payment, charge_id, seats, &self.signer).await;
        };
        let mut tx = self.pool.begin().await?;
        let captured =
            transitions::capture(&mut *tx, payment, charge_id, seats, &self.signer).await?;
        let outcome = if captured.is_some() {
            "captured"
        } else {
            "already_done"
        };
        store::mark_notice(&mut tx, mark, Some(payment.id), outcome).await?;
        tx.commit().await?;
        Ok(captured)
    }
}
