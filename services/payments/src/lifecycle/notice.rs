//! What a provider notice about a payment's charge does. A notice about an earlier
//! attempt, or for another amount than the payment's, changes nothing; a charge or a
//! decline of a pending payment settles it under the lease (deferred while another
//! driver holds it); a late charge of an abandoned payment is booked or refunded; in
//! any other state the notice is only recorded. The notice's mark commits with the
//! change it caused, so a redelivery changes nothing.

use super::Lifecycle;
use crate::domain::{Money, Payment, PaymentStatus};
use crate::error::Error;
use crate::provider::ChargeOutcome;
use crate::store::{self, NoticeMark};

/// What a provider notice did to its payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeEffect {
    /// Applied: the payment moved, or already was where the notice says; marked.
    Applied,
    /// About an attempt before the payment's current one (which was declined, since a
    /// new attempt starts only after a decline): marked, nothing changed.
    Noted,
    /// A charge for another amount than the payment's: marked, nothing changed, logged
    /// at ERROR.
    Rejected,
    /// Not applied now (another driver holds the payment, or finishing it failed): not
    /// marked, so the provider delivers it again.
    Deferred,
}

impl NoticeEffect {
    /// The effect's name in `payments.notices`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Noted => "noted",
            Self::Rejected => "rejected",
            Self::Deferred => "deferred",
        }
    }
}

impl Lifecycle {
    /// Applies a provider notice that the current or an earlier `attempt` of `payment`
    /// was charged for `amount` (minor units) or declined (`outcome`); the caller has
    /// checked the notice's authenticity and that it is new, and `mark` records it in
    /// the transaction of the change.
    ///
    /// # Errors
    /// [`Error::Database`] (before anything moved; nothing is marked).
    pub async fn apply_notice(
        &self,
        payment: Payment,
        attempt: u32,
        outcome: ChargeOutcome,
        amount: &Money,
        mark: &NoticeMark,
    ) -> Result<NoticeEffect, Error> {
        if attempt != payment.charge_attempt {
            self.mark_only(mark, &payment, "earlier_attempt").await?;
            return Ok(NoticeEffect::Noted);
        }
        if matches!(outcome, ChargeOutcome::Succeeded { .. }) && *amount != payment.amount {
            tracing::error!(
                payment_id = %payment.id,
                notice_id = %mark.notice_id,
                notice_minor = amount.amount_minor,
                notice_currency = %amount.currency,
                payment_minor = payment.amount.amount_minor,
                "charge notice for another amount than the payment's: not applied"
            );
            self.mark_only(mark, &payment, "amount_mismatch").await?;
            return Ok(NoticeEffect::Rejected);
        }
        let settled = match (payment.status, &outcome) {
            // The reconciler gave this payment up as never charged, and the charge
            // landed after all: book it (or refund it if the hold is gone). No lease to
            // take on a failed payment; the conditional transitions decide between
            // racers.
            (PaymentStatus::Failed, ChargeOutcome::Succeeded { .. }) => {
                self.settle(payment, outcome, self.lease(), Some(mark))
                    .await
            }
            (PaymentStatus::Pending, _) => {
                let Some((payment, lease)) = self.take(payment.id).await? else {
                    return Ok(NoticeEffect::Deferred);
                };
                self.settle(payment, outcome, lease, Some(mark)).await
            }
            (status, _) => {
                let outcome = format!("already_{}", status.as_str());
                self.mark_only(mark, &payment, &outcome).await?;
                return Ok(NoticeEffect::Applied);
            }
        };
        match settled {
            Ok(_) => Ok(NoticeEffect::Applied),
            Err(error) => {
                tracing::warn!(notice_id = %mark.notice_id, %error, "notice deferred: not applied yet");
                Ok(NoticeEffect::Deferred)
            }
        }
    }

    /// Marks `mark` applied with `outcome`, changing nothing else.
    async fn mark_only(
        &self,
        mark: &NoticeMark,
        payment: &Payment,
        outcome: &str,
    ) -> Result<(), Error> {
        let mut conn = self.pool.acquire().await?;
        store::mark_notice(&mut conn, mark, Some(payment.id), outcome).await
    }
}
