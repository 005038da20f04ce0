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

use futures::stream::{self, StreamExt};
use uuid::Uuid;

use super::PaymentsService;
use crate::error::Error;
use crate::lifecycle::Visit;
use crate::store;

/// Wait before the next visit of a payment a visit left unfinished: always for a pending
/// one, doubled per visit for the others (see [`store::postpone`]).
const REVISIT_BASE: Duration = Duration::from_secs(5);
/// Longest wait between two visits of one payment.
const REVISIT_MAX: Duration = Duration::from_secs(600);
/// Visits in flight at once in one pass. Each is leased and waits mostly on the
/// provider and holds (seconds each when they are slow), so one at a time let a pass of
/// a hundred pending payments outlast their holds' payment windows under load and
/// refund timely payers; each visit owns a different payment, so running them together
/// changes no outcome.
const VISITS_AT_ONCE: usize = 16;

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
    /// One pass over the payments due (up to `batch`, earliest first, up to
    /// [`VISITS_AT_ONCE`] at a time): each unfinished one under its own lease, each
    /// abandoned one against the provider's record; a payment left unfinished is
    /// visited again later, with backoff.
    ///
    /// # Errors
    /// [`Error::Database`] when the scan itself fails; a failure on one payment is
    /// counted in [`ReconcileReport::errors`] and the pass goes on.
    pub async fn reconcile_once(&self, batch: i64) -> Result<ReconcileReport, Error> {
        let ids = {
            let mut conn = self.pool.acquire().await?;
            store::due(&mut conn, batch).await?
        };
        let visits: Vec<_> = stream::iter(ids)
            .map(|id| async move { (id, self.visit(id).await) })
            .buffer_unordered(VISITS_AT_ONCE)
            .collect()
            .await;
        let mut report = ReconcileReport::default();
        for (id, result) in visits {
            match result? {
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

    /// One payment's visit, and its next visit pushed back when this one left it
    /// unfinished. The outer error is the postponement's (the database), the inner one
    /// the visit's.
    async fn visit(&self, id: Uuid) -> Result<Result<Visit, Error>, Error> {
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
        Ok(result)
    }
}
