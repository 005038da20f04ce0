//! The reconciler's pass, the entry point: takes the payments due in the order of each
//! one's next visit time, hands each to [`crate::lifecycle`] (which finishes it from the
//! provider's record, see [`crate::lifecycle::Lifecycle::reconcile`]), and pushes back
//! the next visit of any it left unfinished (a pending one by a few seconds, while its
//! hold's payment window runs; the others with backoff), so payments that cannot
//! finish yet never starve the others.
//!
//! Only a payment's own provider is asked about it: a payment charged through a
//! provider this process does not have is left alone (counted as `other_provider` in
//! `payments.reconciler.actions`, logged, and visited again with backoff), for a
//! process configured with that provider.

use std::time::Duration;

use super::PaymentsService;
use crate::error::Error;
use crate::lifecycle::Visit;
use crate::store;

/// Wait before the next visit of a payment a visit left unfinished: always for a pending
/// one, doubled per visit for the others (see [`store::postpone`]).
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
    fn count(&mut self, visit: Visit) {
        match visit {
            Visit::Captured => self.captured += 1,
            Visit::Refunded => self.refunded += 1,
            Visit::Failed => self.failed += 1,
            Visit::Skipped => self.skipped += 1,
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
            let result = self.lifecycle.reconcile(id).await;
            if !result.as_ref().is_ok_and(|visit| visit.finished()) {
                let mut conn = self.pool.acquire().await?;
                store::postpone(
                    &mut conn,
                    id,
                    (REVISIT_BASE, REVISIT_MAX),
                    self.lifecycle.abandon_after(),
                )
                .await?;
            }
            match result {
                Ok(visit) => {
                    self.metrics.reconciled(visit.as_str());
                    report.count(visit);
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
}
