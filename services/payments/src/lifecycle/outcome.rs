//! Waiting for the outcome of a payment another driver runs, or taking it over once
//! that driver gave the lease back or died: whoever asks again (a repeated Confirm, a
//! repeated RefundOrder) finishes what a failed attempt started.

use std::time::{Duration, Instant};

use super::{Lease, Lifecycle};
use crate::domain::{Order, Payment, PaymentStatus};
use crate::error::Error;

/// How soon a duplicate looks again while the first request runs; each later look
/// waits twice as long as the one before, up to [`DUPLICATE_POLL_MAX`]. A payment
/// usually finishes within the first looks, and under load — when fans repeat their
/// Confirms — a duplicate costs its two statements a dozen times in the duplicate wait,
/// not eighty.
const DUPLICATE_POLL: Duration = Duration::from_millis(25);
/// The longest wait between two looks of a duplicate.
const DUPLICATE_POLL_MAX: Duration = Duration::from_millis(200);

impl Lifecycle {
    /// The final outcome of an existing payment: at once when it is final; else by
    /// taking over its lease when the last driver gave it back or died, else by waiting
    /// for the driver up to the duplicate wait. `method` is the Confirm's payment method
    /// (`None` for a refund), with which a pending payment is charged again under the
    /// same idempotency key.
    ///
    /// # Errors
    /// [`Error::InProgress`] when the driver did not finish in time;
    /// [`Error::PaymentDeclined`] for a declined payment, [`Error::PaymentAbandoned`] for
    /// one given up unconfirmed; as the flow it takes over.
    pub(super) async fn await_outcome(
        &self,
        mut payment: Payment,
        method: Option<&str>,
    ) -> Result<Order, Error> {
        let deadline = Instant::now() + self.settings.duplicate_wait;
        let mut poll = DUPLICATE_POLL;
        loop {
            match payment.status {
                PaymentStatus::Pending | PaymentStatus::RefundPending => {
                    if let Some((taken, lease)) = self.take(payment.id).await? {
                        return self.drive(taken, method, lease).await;
                    }
                }
                PaymentStatus::Failed if payment.declined => {
                    return Err(Error::PaymentDeclined("the payment was declined".into()));
                }
                PaymentStatus::Failed => return Err(Error::PaymentAbandoned),
                PaymentStatus::Captured | PaymentStatus::Refunded | PaymentStatus::Comp => {
                    return self.order(payment).await;
                }
            }
            if Instant::now() >= deadline {
                return Err(Error::InProgress);
            }
            tokio::time::sleep(poll.min(deadline.saturating_duration_since(Instant::now()))).await;
            poll = (poll * 2).min(DUPLICATE_POLL_MAX);
            payment = self
                .payment_by_id(payment.id)
                .await?
                .ok_or_else(|| Error::CorruptRow("payment vanished".into()))?;
        }
    }

    /// Drives an unfinished payment whose lease the caller holds to a final state: a
    /// refund is carried out; a pending payment is charged with `method` (the same
    /// attempt, so the same idempotency key), or without one settled from the provider's
    /// record.
    async fn drive(
        &self,
        payment: Payment,
        method: Option<&str>,
        lease: Lease,
    ) -> Result<Order, Error> {
        match (payment.status, method) {
            (PaymentStatus::RefundPending, _) => self.finish_refund(payment, lease, None).await,
            (_, Some(method)) => match self.provider_for(payment.id).await {
                Ok(provider) => self.charge_and_book(payment, method, lease, provider).await,
                Err(error) => {
                    self.give_back(payment.id, lease).await;
                    Err(error)
                }
            },
            (_, None) => {
                let id = payment.id;
                self.resolve_pending(payment, lease).await?;
                self.order_by_id(id).await
            }
        }
    }
}
