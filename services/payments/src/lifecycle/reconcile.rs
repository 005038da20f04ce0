//! Finishing a payment from the provider's record of its current attempt (looked up
//! under the attempt's idempotency key): an unfinished one whose driver died or gave up
//! (under a lease), and an abandoned one (failed, never seen charged) whose charge may
//! still land (no lease: the conditional transitions decide between racers).

use uuid::Uuid;

use super::charge::Settled;
use super::{Lease, Lifecycle};
use crate::domain::{Payment, PaymentStatus};
use crate::error::Error;
use crate::provider::{ChargeOutcome, LedgerRecord};

/// What a reconciler visit did to a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Charged at the provider: now captured with tickets.
    Captured,
    /// Refunded (the hold was gone, or a decided refund was finished).
    Refunded,
    /// Failed: declined, or never charged and abandoned.
    Failed,
    /// Left for a later visit (another driver holds it, no charge yet and not old
    /// enough, or nothing to do).
    Skipped,
}

impl Visit {
    /// The visit's name in `payments.reconciler.actions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Captured => "captured",
            Self::Refunded => "refunded",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// Whether the payment is finished for the reconciler (no later visit needed).
    pub fn finished(self) -> bool {
        matches!(self, Self::Captured | Self::Refunded)
    }
}

impl Lifecycle {
    /// One reconciler visit of payment `id`: an unfinished one under its lease
    /// (refund_pending: the refund carried out; pending: settled from the provider's
    /// record), an abandoned one against the provider's record, anything else skipped.
    ///
    /// # Errors
    /// [`Error::ProviderNotConfigured`] for a payment of another provider (not even
    /// leased, so that provider's process is not kept waiting);
    /// [`Error::ProviderUnavailable`]; [`Error::Dependency`] (holds, while booking or
    /// releasing); [`Error::Database`]. The payment is then left as it was, its lease
    /// given back, for the next visit.
    pub async fn reconcile(&self, id: Uuid) -> Result<Visit, Error> {
        self.provider_for(id).await?;
        match self.take(id).await? {
            Some((payment, lease)) if payment.status == PaymentStatus::RefundPending => self
                .finish_refund(payment, lease, None)
                .await
                .map(|_| Visit::Refunded),
            Some((payment, lease)) => self.resolve_pending(payment, lease).await,
            None => match self.payment_by_id(id).await? {
                Some(payment) if payment.status == PaymentStatus::Failed && !payment.declined => {
                    self.revisit_abandoned(payment).await
                }
                _ => Ok(Visit::Skipped),
            },
        }
    }

    /// An abandoned payment (failed, never seen charged) against the provider's record:
    /// a charge that landed after all is booked (or refunded when the hold is gone), a
    /// decline makes the failure final, nothing leaves it for a later visit. No lease is
    /// taken on a failed payment; the conditional transitions decide between racers.
    async fn revisit_abandoned(&self, payment: Payment) -> Result<Visit, Error> {
        let provider = self.provider_for(payment.id).await?;
        let key = payment.charge_key();
        let record = self
            .provider_call("lookup", provider.lookup(&key))
            .await
            .map_err(|error| Error::ProviderUnavailable(error.to_string()))?;
        match record {
            Some(LedgerRecord::Charge(outcome)) => {
                if matches!(outcome, ChargeOutcome::Succeeded { .. }) {
                    tracing::warn!(payment_id = %payment.id, "an abandoned payment was charged after all: booking it");
                }
                self.settle_found(payment, outcome, self.lease()).await
            }
            Some(LedgerRecord::Refund { .. }) | None => Ok(Visit::Skipped),
        }
    }

    /// Completes a pending payment (lease held) from the provider's record of its charge:
    /// charged → book (capture or refund); declined → failed; nothing → failed
    /// (abandoned) once older than the abandon age, else left for later with the lease
    /// given back.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`]; as [`Self::book`].
    pub(super) async fn resolve_pending(
        &self,
        payment: Payment,
        lease: Lease,
    ) -> Result<Visit, Error> {
        let provider = match self.provider_for(payment.id).await {
            Ok(provider) => provider,
            Err(error) => {
                self.give_back(payment.id, lease).await;
                return Err(error);
            }
        };
        let key = payment.charge_key();
        let record = match self.provider_call("lookup", provider.lookup(&key)).await {
            Ok(record) => record,
            Err(error) => {
                self.give_back(payment.id, lease).await;
                return Err(Error::ProviderUnavailable(error.to_string()));
            }
        };
        match record {
            Some(LedgerRecord::Charge(outcome)) => self.settle_found(payment, outcome, lease).await,
            Some(LedgerRecord::Refund { .. }) | None => {
                let mut conn = self.pool.acquire().await?;
                if super::transitions::mark_abandoned(
                    &mut conn,
                    payment.id,
                    self.settings.abandon_after,
                )
                .await?
                {
                    tracing::warn!(payment_id = %payment.id, "pending payment never charged: failed");
                    Ok(Visit::Failed)
                } else {
                    drop(conn);
                    self.give_back(payment.id, lease).await;
                    Ok(Visit::Skipped)
                }
            }
        }
    }

    /// Settles a payment on the charge outcome the provider's record shows.
    async fn settle_found(
        &self,
        payment: Payment,
        outcome: ChargeOutcome,
        lease: Lease,
    ) -> Result<Visit, Error> {
        Ok(match self.settle(payment, outcome, lease, None).await? {
            Settled::Booked(order) => match order.payment.status {
                PaymentStatus::Captured => Visit::Captured,
                PaymentStatus::Refunded => Visit::Refunded,
                _ => Visit::Skipped,
            },
            Settled::Declined(_) => Visit::Failed,
        })
    }
}
