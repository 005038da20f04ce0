//! Provider notices (webhooks): a charge notice is handled like a late confirm. Each
//! notice id is applied at most once: its mark commits with the state change it caused,
//! and a redelivery finds the mark and changes nothing. A delivery that could not be
//! applied now (someone else is finishing the payment, or finishing it failed) is
//! deferred: not marked and not acknowledged, so the provider delivers it again. A
//! charge notice whose amount is not the payment's changes nothing and is logged at
//! ERROR.

use super::PaymentsService;
use crate::domain::{PaymentStatus, parse_charge_key};
use crate::error::Error;
use crate::lifecycle::{self, Lease};
use crate::provider::{Notice, NoticeKind};
use crate::store::{self, NoticeMark};

/// What a notice delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeOutcome {
    /// Applied now (the payment moved, or it was already where the notice says).
    Applied,
    /// This notice id was applied before: nothing done.
    Duplicate,
    /// Someone else is finishing the payment, or finishing it failed this time (the
    /// reconciler will): not marked, so a redelivery looks again.
    Deferred,
}

impl PaymentsService {
    /// Applies a provider notice after checking its signature.
    ///
    /// # Errors
    /// [`Error::NoticeSignatureInvalid`]; [`Error::Database`].
    pub async fn provider_notice(
        &self,
        notice: &Notice,
        signature: &str,
    ) -> Result<NoticeOutcome, Error> {
        if !notice.verify(&self.notice_secret, signature) {
            return Err(Error::NoticeSignatureInvalid);
        }
        self.apply_notice(notice).await
    }

    /// Applies a provider notice whose authenticity the caller has checked (the gRPC
    /// path by the notice's HMAC in [`PaymentsService::provider_notice`], Stripe's
    /// webhook by its `Stripe-Signature`).
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn apply_notice(&self, notice: &Notice) -> Result<NoticeOutcome, Error> {
        let mark = NoticeMark {
            notice_id: notice.notice_id.clone(),
            kind: notice.kind,
            idempotency_key: notice.idempotency_key.clone(),
        };
        let mut conn = self.pool.acquire().await?;
        if store::notice_seen(&mut conn, &notice.notice_id).await? {
            self.metrics.notice("duplicate");
            return Ok(NoticeOutcome::Duplicate);
        }
        let key = match notice.kind {
            NoticeKind::ChargeSucceeded | NoticeKind::ChargeFailed => {
                parse_charge_key(&notice.idempotency_key)
            }
            NoticeKind::RefundSucceeded => None,
        };
        let payment = match key {
            Some((key, _)) => store::by_hold_key(&mut conn, key).await?,
            None => None,
        };
        // A notice about an earlier attempt: that attempt was declined (a new one starts
        // only after a decline), so there is nothing to change.
        let payment = match (payment, key) {
            (Some(payment), Some((_, attempt))) if attempt != payment.charge_attempt => {
                store::mark_notice(&mut conn, &mark, Some(payment.id), "earlier_attempt").await?;
                self.metrics.notice("noted");
                return Ok(NoticeOutcome::Applied);
            }
            (payment, _) => payment,
        };
        if let Some(payment) = &payment
            && notice.kind == NoticeKind::ChargeSucceeded
            && notice.amount != payment.amount
        {
            tracing::error!(
                payment_id = %payment.id,
                notice_id = %notice.notice_id,
                notice_minor = notice.amount.amount_minor,
                notice_currency = %notice.amount.currency,
                payment_minor = payment.amount.amount_minor,
                "charge notice for another amount than the payment's: not applied"
            );
            store::mark_notice(&mut conn, &mark, Some(payment.id), "amount_mismatch").await?;
            self.metrics.notice("rejected");
            return Ok(NoticeOutcome::Applied);
        }
        let Some(payment) = payment else {
            // Refund confirmations, and charges we never recorded an intent for: kept
            // for the record, nothing to change.
            store::mark_notice(&mut conn, &mark, None, "noted").await?;
            self.metrics.notice("noted");
            return Ok(NoticeOutcome::Applied);
        };
        if payment.status == PaymentStatus::Failed && notice.kind == NoticeKind::ChargeSucceeded {
            // The reconciler gave this payment up as never charged, and the charge landed
            // after all: book it (or refund it if the hold is gone). No lease to take on
            // a failed payment; the conditional transitions decide between racers.
            drop(conn);
            let lease = Lease::new(self.settings.lease);
            return match self
                .book(payment, &notice.provider_charge_id, lease, Some(&mark))
                .await
            {
                Ok(_) => {
                    self.metrics.notice("applied");
                    Ok(NoticeOutcome::Applied)
                }
                Err(error) => {
                    tracing::warn!(notice_id = %notice.notice_id, %error, "late charge not applied yet");
                    self.metrics.notice("deferred");
                    Ok(NoticeOutcome::Deferred)
                }
            };
        }
        if payment.status != PaymentStatus::Pending {
            let outcome = format!("already_{}", payment.status.as_str());
            store::mark_notice(&mut conn, &mark, Some(payment.id), &outcome).await?;
            self.metrics.notice("applied");
            return Ok(NoticeOutcome::Applied);
        }
        let lease = Lease::new(self.settings.lease);
        let Some(payment) = lifecycle::take_lease(&mut conn, payment.id, lease).await? else {
            self.metrics.notice("deferred");
            return Ok(NoticeOutcome::Deferred);
        };
        drop(conn);
        let applied = match notice.kind {
            NoticeKind::ChargeSucceeded => self
                .book(payment, &notice.provider_charge_id, lease, Some(&mark))
                .await
                .map(|_| ()),
            _ => {
                async {
                    let mut tx = self.pool.begin().await?;
                    lifecycle::mark_declined(&mut tx, payment.id).await?;
                    store::mark_notice(&mut tx, &mark, Some(payment.id), "failed").await?;
                    tx.commit().await?;
                    Ok(())
                }
                .await
            }
        };
        match applied {
            Ok(()) => {
                self.metrics.notice("applied");
                Ok(NoticeOutcome::Applied)
            }
            Err(error) => {
                tracing::warn!(notice_id = %notice.notice_id, %error, "notice not applied yet; the reconciler will finish");
                self.metrics.notice("deferred");
                Ok(NoticeOutcome::Deferred)
            }
        }
    }
}
