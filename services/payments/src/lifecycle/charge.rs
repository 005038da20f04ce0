//! The charge of the current attempt, and what the provider's answer about it does to
//! the payment, whoever heard that answer (the Confirm's own call, a provider notice,
//! the reconciler's lookup): charged → booked (captured, or refunded when the hold is
//! gone); declined → failed.

use std::sync::Arc;

use uuid::Uuid;

use super::transitions;
use super::{Lease, Lifecycle};
use crate::domain::{Order, Payment};
use crate::error::Error;
use crate::provider::{ChargeOutcome, ChargeRequest, PaymentProvider};
use crate::store::{self, NoticeMark};

/// What the provider's answer about a charge did to the payment.
pub(super) enum Settled {
    /// Charged: the payment is booked (captured with tickets), or refunded because the
    /// hold was gone; or another driver finished it first. Its order.
    Booked(Box<Order>),
    /// Declined (the provider's reason): the payment is failed, nothing was charged.
    Declined(String),
}

impl Lifecycle {
    /// Charges `payment` (pending, lease held) through `provider` (the payment's own)
    /// under the attempt's idempotency key, outside any transaction, then settles it on
    /// the answer. No answer (an error or the timeout) leaves it pending, the lease
    /// given back, for a retry, a notice or the reconciler.
    ///
    /// # Errors
    /// [`Error::PaymentDeclined`]; [`Error::ProviderUnavailable`]; as [`Self::book`].
    pub(super) async fn charge_and_book(
        &self,
        payment: Payment,
        method: &str,
        lease: Lease,
        provider: Arc<dyn PaymentProvider>,
    ) -> Result<Order, Error> {
        let request = ChargeRequest {
            idempotency_key: payment.charge_key(),
            amount: payment.amount.clone(),
            method_token: method.to_owned(),
        };
        let outcome = match self
            .provider_call("charge", provider.charge(&request))
            .await
        {
            Ok(outcome) => outcome,
            Err(error) => {
                self.metrics.charge("error");
                self.give_back(payment.id, lease).await;
                return Err(Error::ProviderUnavailable(error.to_string()));
            }
        };
        self.metrics.charge(match outcome {
            ChargeOutcome::Succeeded { .. } => "succeeded",
            ChargeOutcome::Declined { .. } => "declined",
        });
        match self.settle(payment, outcome, lease, None).await? {
            Settled::Booked(order) => Ok(*order),
            Settled::Declined(reason) => Err(Error::PaymentDeclined(reason)),
        }
    }

    /// Applies the provider's `outcome` for the payment's current attempt: a charge is
    /// booked ([`Self::book`]); a decline moves pending, or failed without a decline
    /// (abandoned), → failed (declined), the lease cleared. `notice` is marked applied
    /// in the transaction of the change.
    ///
    /// # Errors
    /// As [`Self::book`]; [`Error::Database`].
    pub(super) async fn settle(
        &self,
        payment: Payment,
        outcome: ChargeOutcome,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Settled, Error> {
        match outcome {
            ChargeOutcome::Succeeded { charge_id } => self
                .book(payment, &charge_id, lease, notice)
                .await
                .map(|order| Settled::Booked(Box::new(order))),
            ChargeOutcome::Declined { reason } => {
                self.decline(payment.id, notice).await?;
                Ok(Settled::Declined(reason))
            }
        }
    }

    /// pending or abandoned → failed (declined), with `notice` marked in the same
    /// transaction.
    async fn decline(&self, id: Uuid, notice: Option<&NoticeMark>) -> Result<(), Error> {
        let Some(mark) = notice else {
            let mut conn = self.pool.acquire().await?;
            transitions::mark_declined(&mut conn, id).await?;
            return Ok(());
        };
        let mut tx = self.pool.begin().await?;
        transitions::mark_declined(&mut tx, id).await?;
        store::mark_notice(&mut tx, mark, Some(id), "failed").await?;
        tx.commit().await?;
        Ok(())
    }
}
