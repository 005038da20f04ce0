//! The reconciler's work: finish payments left unfinished by a crash, a timeout or an
//! unreachable dependency, by asking the provider what happened under the payment's
//! idempotency key; and look again at abandoned payments (never seen charged) for a day,
//! in case their charge lands late. Work is taken in the order of each payment's next
//! visit time, and a visit that leaves a payment unfinished pushes it back with backoff,
//! so payments that cannot finish yet never starve the others.
//!
//! Only a payment's own provider is asked about it: a payment charged through a
//! provider this process does not have is left alone (counted as `other_provider` in
//! `payments.reconciler.actions`, logged, and visited again with backoff), for a
//! process configured with that provider.

use std::time::Duration;

use super::PaymentsService;
use crate::domain::{Payment, PaymentStatus};
use crate::error::Error;
use crate::lifecycle::{self, Lease};
use crate::provider::{ChargeOutcome, LedgerRecord};
use crate::store;

/// Wait before the second visit of a payment a visit left unfinished; doubled per visit.
const REVISIT_BASE: Duration = Duration::from_secs(5);
/// Longest wait between two visits of one payment.
const REVISIT_MAX: Duration = Duration::from_secs(600);

/// What one reconciler pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Payments charged at the provider and now booked with tickets.
    pub captured: u32,
    /// Payments refunded (hold gone, or a decided refund finished).
    pub refunded: u32,
    /// Payments marked failed (declined, or never charged and abandoned).
    pub failed: u32,
    /// Payments looked at and left for later (no charge yet, not old enough).
    pub skipped: u32,
    /// Payments whose completion failed this time (provider or holds unreachable).
    pub errors: u32,
    /// Payments charged through a provider this process does not have: left alone.
    pub other_provider: u32,
}

impl ReconcileReport {
    fn count(&mut self, action: &'static str) {
        match action {
            "captured" => self.captured += 1,
            "refunded" => self.refunded += 1,
            "failed" => self.failed += 1,
            _ => self.skipped += 1,
        }
    }
}

impl PaymentsService {
    /// One pass over the payments due (up to `batch`, earliest first): each unfinished
    /// one under its own lease, each abandoned one against the provider's record; a
    /// payment left unfinished is visited again later, with backoff.
    ///
    /// # Errors
    /// [`Error::Database`] when the scan itself fails; a failure on one payment is
    /// counted in [`ReconcileReport::errors`] and the pass goes on.
    pub async fn reconcile_once(&self, batch: i64) -> Result<ReconcileReport, Error> {
        let ids = {
            let mut conn = self.pool.acquire().await?;
            store::due(&mut conn, batch).await?
        };
        let mut report = ReconcileReport::default();
        for id in ids {
            let result = self.visit(id).await;
            if !matches!(result, Ok("captured" | "refunded")) {
                let mut conn = self.pool.acquire().await?;
                store::postpone(&mut conn, id, REVISIT_BASE, REVISIT_MAX).await?;
            }
            match result {
                Ok(action) => {
                    self.metrics.reconciled(action);
                    report.count(action);
                }
                Err(Error::ProviderNotConfigured(provider)) => {
                    self.metrics.reconciled("other_provider");
                    report.other_provider += 1;
                    tracing::warn!(payment_id = %id, %provider, "payment of a provider not configured here: left for a process that has it");
                }
                Err(error) => {
                    self.metrics.reconciled("error");
                    report.errors += 1;
                    tracing::warn!(payment_id = %id, %error, "reconciling failed; will retry");
                }
            }
        }
        if report != ReconcileReport::default() {
            tracing::info!(?report, "reconciler pass");
        }
        Ok(report)
    }

    /// One payment of the scan: an abandoned one against the provider's record, an
    /// unfinished one under a lease. Returns the action taken.
    async fn visit(&self, id: uuid::Uuid) -> Result<&'static str, Error> {
        // Another provider's payment: not even leased, so its own process is not kept
        // waiting.
        self.provider_for(id).await?;
        let lease = Lease::new(self.settings.lease);
        let taken = {
            let mut conn = self.pool.acquire().await?;
            lifecycle::take_lease(&mut conn, id, lease).await?
        };
        match taken {
            Some(payment) if payment.status == PaymentStatus::RefundPending => self
                .finish_refund(payment, lease, None)
                .await
                .map(|_| "refunded"),
            Some(payment) => self.resolve_pending(payment, lease).await,
            None => match self.payment_by_id(id).await? {
                Some(payment) if payment.status == PaymentStatus::Failed && !payment.declined => {
                    self.revisit_abandoned(payment, lease).await
                }
                _ => Ok("skipped"),
            },
        }
    }

    /// An abandoned payment (failed, never seen charged) against the provider's record:
    /// a charge that landed after all is booked (or refunded when the hold is gone), a
    /// decline makes the failure final, nothing leaves it for a later visit. No lease is
    /// taken on a failed payment; the conditional transitions decide between racers.
    async fn revisit_abandoned(
        &self,
        payment: Payment,
        lease: Lease,
    ) -> Result<&'static str, Error> {
        let provider = self.provider_for(payment.id).await?;
        let key = payment.charge_key();
        let record = self
            .provider_call("lookup", provider.lookup(&key))
            .await
            .map_err(|error| Error::ProviderUnavailable(error.to_string()))?;
        match record {
            Some(LedgerRecord::Charge(ChargeOutcome::Succeeded { charge_id })) => {
                tracing::warn!(payment_id = %payment.id, "an abandoned payment was charged after all: booking it");
                self.book_found(payment, &charge_id, lease).await
            }
            Some(LedgerRecord::Charge(ChargeOutcome::Declined { .. })) => {
                let mut conn = self.pool.acquire().await?;
                lifecycle::mark_declined(&mut conn, payment.id).await?;
                Ok("failed")
            }
            Some(LedgerRecord::Refund { .. }) | None => Ok("skipped"),
        }
    }

    /// Books a payment whose charge the provider's record shows; returns the action.
    async fn book_found(
        &self,
        payment: Payment,
        charge_id: &str,
        lease: Lease,
    ) -> Result<&'static str, Error> {
        let order = self.book(payment, charge_id, lease, None).await?;
        Ok(match order.payment.status {
            PaymentStatus::Captured => "captured",
            PaymentStatus::Refunded => "refunded",
            _ => "skipped",
        })
    }

    /// Completes a pending payment (lease held) from the provider's record of its charge:
    /// charged → book (capture or refund); declined → failed; nothing → failed once
    /// older than the abandon age, else left for later. Returns the action taken.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`]; as [`PaymentsService::book`].
    pub(super) async fn resolve_pending(
        &self,
        payment: Payment,
        lease: Lease,
    ) -> Result<&'static str, Error> {
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
            Some(LedgerRecord::Charge(ChargeOutcome::Succeeded { charge_id })) => {
                self.book_found(payment, &charge_id, lease).await
            }
            Some(LedgerRecord::Charge(ChargeOutcome::Declined { .. })) => {
                let mut conn = self.pool.acquire().await?;
                lifecycle::mark_declined(&mut conn, payment.id).await?;
                Ok("failed")
            }
            Some(LedgerRecord::Refund { .. }) | None => {
                let mut conn = self.pool.acquire().await?;
                if lifecycle::mark_abandoned(&mut conn, payment.id, self.settings.abandon_after)
                    .await?
                {
                    tracing::warn!(payment_id = %payment.id, "pending payment never charged: failed");
                    Ok("failed")
                } else {
                    drop(conn);
                    self.give_back(payment.id, lease).await;
                    Ok("skipped")
                }
            }
        }
    }
}
