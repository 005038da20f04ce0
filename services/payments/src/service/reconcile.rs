//! The reconciler's work: finish payments left unfinished by a crash, a timeout or an
//! unreachable dependency, by asking the provider what happened under the payment's
//! idempotency key.

use super::PaymentsService;
use crate::domain::{Payment, PaymentStatus};
use crate::error::Error;
use crate::provider::{ChargeOutcome, LedgerRecord};
use crate::store::{self, Lease};

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
    /// One pass: every unfinished payment nobody holds a lease on (up to `batch`), each
    /// under its own lease.
    ///
    /// # Errors
    /// [`Error::Database`] when the scan itself fails; a failure on one payment is
    /// counted in [`ReconcileReport::errors`] and the pass goes on.
    pub async fn reconcile_once(&self, batch: i64) -> Result<ReconcileReport, Error> {
        let ids = {
            let mut conn = self.pool.acquire().await?;
            store::unfinished(&mut conn, batch).await?
        };
        let mut report = ReconcileReport::default();
        for id in ids {
            let lease = Lease::new(self.settings.lease);
            let taken = {
                let mut conn = self.pool.acquire().await?;
                store::take_lease(&mut conn, id, lease).await?
            };
            let Some(payment) = taken else { continue };
            let result = match payment.status {
                PaymentStatus::RefundPending => self
                    .finish_refund(payment, lease, None)
                    .await
                    .map(|_| "refunded"),
                _ => self.resolve_pending(payment, lease).await,
            };
            match result {
                Ok(action) => {
                    self.metrics.reconciled(action);
                    report.count(action);
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
        let key = payment.charge_key();
        let record = match self
            .provider_call("lookup", self.provider.lookup(&key))
            .await
        {
            Ok(record) => record,
            Err(error) => {
                self.give_back(payment.id, lease).await;
                return Err(Error::ProviderUnavailable(error.to_string()));
            }
        };
        match record {
            Some(LedgerRecord::Charge(ChargeOutcome::Succeeded { charge_id })) => {
                let order = self.book(payment, &charge_id, lease, None).await?;
                Ok(match order.payment.status {
                    PaymentStatus::Captured => "captured",
                    PaymentStatus::Refunded => "refunded",
                    _ => "skipped",
                })
            }
            Some(LedgerRecord::Charge(ChargeOutcome::Declined { .. })) => {
                let mut conn = self.pool.acquire().await?;
                store::mark_declined(&mut conn, payment.id).await?;
                Ok("failed")
            }
            Some(LedgerRecord::Refund { .. }) | None => {
                let mut conn = self.pool.acquire().await?;
                if store::mark_abandoned(&mut conn, payment.id, self.settings.abandon_after).await?
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
