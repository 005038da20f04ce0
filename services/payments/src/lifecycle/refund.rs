//! Refunds: the box office's (captured → refund_pending), a charge whose hold was gone
//! (pending or failed → refund_pending), and carrying a decided refund out at the
//! provider (refund_pending → refunded).

use uuid::Uuid;

use super::transitions;
use super::{Lease, Lifecycle};
use crate::domain::{Order, Payment, PaymentStatus, RefundReason};
use crate::error::Error;
use crate::provider::RefundRequest;
use crate::store::{self, NoticeMark};

impl Lifecycle {
    /// Refunds the paid order `id` for the box office and releases its seats. The
    /// conditional `captured → refund_pending` update decides, so two presses refund
    /// once; a repeated request returns the existing refund (finishing it first when it
    /// is still under way and nobody drives it).
    ///
    /// # Errors
    /// [`Error::OrderNotFound`]; [`Error::NotRefundable`] (pending, failed, comp);
    /// [`Error::InProgress`]; [`Error::ProviderUnavailable`], [`Error::Dependency`]
    /// (holds) and [`Error::Database`] while carrying it out: the payment then stays
    /// refund_pending, its tickets void, and the reconciler or a repeated request
    /// finishes it.
    pub async fn refund(&self, id: Uuid, reason: RefundReason) -> Result<Order, Error> {
        let payment = self.payment_by_id(id).await?.ok_or(Error::OrderNotFound)?;
        match payment.status {
            PaymentStatus::Comp if reason == RefundReason::EventCancelled => {
                self.void_comp(payment).await
            }
            PaymentStatus::Captured => {
                self.refund_from(
                    id,
                    &[PaymentStatus::Captured],
                    reason,
                    None,
                    self.lease(),
                    None,
                )
                .await
            }
            PaymentStatus::Refunded | PaymentStatus::RefundPending => {
                self.await_outcome(payment, None).await
            }
            other => Err(Error::NotRefundable(other.as_str())),
        }
    }

    /// A comp of a cancelled event: its seats released at holds, then its tickets
    /// voided (in that order, so a crash between leaves valid tickets and the next
    /// request does both again; both steps are idempotent). Nothing is paid back; the
    /// order stays a comp.
    ///
    /// # Errors
    /// [`Error::Dependency`] (holds); [`Error::Database`].
    async fn void_comp(&self, payment: Payment) -> Result<Order, Error> {
        self.holds
            .release(payment.hold_key, RefundReason::EventCancelled.as_str())
            .await?;
        let mut conn = self.pool.acquire().await?;
        let voided = transitions::void_tickets(&mut conn, payment.id).await?;
        if voided > 0 {
            tracing::info!(payment_id = %payment.id, voided, "comp tickets voided: event cancelled");
        }
        drop(conn);
        self.order_by_id(payment.id).await
    }

    /// Decides a refund (`from` → refund_pending, tickets void, `lease` taken) and
    /// carries it out. When another request decided it first, waits for that one's
    /// outcome.
    ///
    /// # Errors
    /// [`Error::NotRefundable`] when the payment is in no state to refund; as
    /// [`Self::finish_refund`].
    pub(super) async fn refund_from(
        &self,
        id: Uuid,
        from: &[PaymentStatus],
        reason: RefundReason,
        charge_id: Option<&str>,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Order, Error> {
        let decided = {
            let mut tx = self.pool.begin().await?;
            let moved =
                transitions::begin_refund(&mut tx, id, from, reason, charge_id, lease).await?;
            tx.commit().await?;
            moved
        };
        match decided {
            Some(payment) => self.finish_refund(payment, lease, notice).await,
            None => {
                let payment = self.payment_by_id(id).await?.ok_or(Error::OrderNotFound)?;
                match payment.status {
                    PaymentStatus::Refunded | PaymentStatus::RefundPending => {
                        // Boxed: waiting may drive the payment, which may refund again.
                        Box::pin(self.await_outcome(payment, None)).await
                    }
                    // A concurrent path finished it another way (captured): its answer.
                    _ if from.contains(&PaymentStatus::Pending) => self.order(payment).await,
                    other => Err(Error::NotRefundable(other.as_str())),
                }
            }
        }
    }

    /// refund_pending → refunded: carries out a decided refund under the caller's lease:
    /// releases the seats when the box office refunded a booking, refunds at the
    /// provider under `refund:<hold key>`, then marks the payment refunded (and `notice`
    /// applied) in one transaction. Every step is idempotent, so a rerun after a crash
    /// is safe.
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`]; [`Error::Dependency`]; [`Error::Database`]. The
    /// payment then stays refund_pending, the lease given back, for the reconciler.
    pub(super) async fn finish_refund(
        &self,
        payment: Payment,
        lease: Lease,
        notice: Option<&NoticeMark>,
    ) -> Result<Order, Error> {
        let result = self.finish_refund_steps(&payment, notice).await;
        if result.is_err() {
            self.give_back(payment.id, lease).await;
        }
        result?;
        self.order_by_id(payment.id).await
    }

    async fn finish_refund_steps(
        &self,
        payment: &Payment,
        notice: Option<&NoticeMark>,
    ) -> Result<(), Error> {
        // Before anything moves: the refund goes to the payment's own provider.
        let provider = self.provider_for(payment.id).await?;
        let reason = payment.refund_reason.unwrap_or(RefundReason::HoldExpired);
        if reason != RefundReason::HoldExpired {
            self.holds
                .release(payment.hold_key, reason.as_str())
                .await?;
        }
        let charge_id = payment
            .provider_charge_id
            .clone()
            .ok_or_else(|| Error::CorruptRow(format!("payment {}: no charge id", payment.id)))?;
        let request = RefundRequest {
            idempotency_key: payment.hold_key.refund_key(),
            charge_id,
            amount: payment.amount.clone(),
        };
        let refund_id = self
            .provider_call("refund", provider.refund(&request))
            .await
            .map_err(|e| Error::ProviderUnavailable(e.to_string()))?;
        let mut tx = self.pool.begin().await?;
        let moved = transitions::finish_refund(&mut tx, payment.id, &refund_id).await?;
        if let Some(mark) = notice {
            let outcome = if moved { "refunded" } else { "already_done" };
            store::mark_notice(&mut tx, mark, Some(payment.id), outcome).await?;
        }
        tx.commit().await?;
        if moved {
            self.metrics.refund(reason.as_str());
            tracing::info!(payment_id = %payment.id, reason = reason.as_str(), "payment refunded");
        }
        Ok(())
    }
}
