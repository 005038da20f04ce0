//! Provider notices (webhooks), the entry point: checks a notice's signature, skips a
//! notice id applied before, finds the payment its idempotency key names, and hands
//! the notice to [`crate::lifecycle`], which decides what it does. A notice about no
//! payment of ours (a refund confirmation, a charge we never recorded an intent for) is
//! only recorded. A delivery the lifecycle could not apply now is deferred: not
//! recorded and not acknowledged, so the provider delivers it again.

use super::PaymentsService;
use crate::domain::parse_charge_key;
use crate::error::Error;
use crate::lifecycle::NoticeEffect;
use crate::provider::{ChargeOutcome, Notice, NoticeKind};
use crate::store::{self, NoticeMark};

/// What a notice delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeOutcome {
    /// Applied now (the payment moved, or it was already where the notice says, or
    /// there was nothing to change).
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
        let outcome = match notice.kind {
            NoticeKind::ChargeSucceeded => Some(ChargeOutcome::Succeeded {
                charge_id: notice.provider_charge_id.clone(),
            }),
            NoticeKind::ChargeFailed => Some(ChargeOutcome::Declined {
                reason: "the provider notified a decline".into(),
            }),
            NoticeKind::RefundSucceeded => None,
        };
        let key = outcome
            .is_some()
            .then(|| parse_charge_key(&notice.idempotency_key))
            .flatten();
        let payment = match key {
            Some((key, _)) => store::by_hold_key(&mut conn, key).await?,
            None => None,
        };
        let (Some(payment), Some((_, attempt)), Some(outcome)) = (payment, key, outcome) else {
            // Refund confirmations, and charges we never recorded an intent for: kept
            // for the record, nothing to change.
            store::mark_notice(&mut conn, &mark, None, "noted").await?;
            self.metrics.notice("noted");
            return Ok(NoticeOutcome::Applied);
        };
        drop(conn);
        let effect = self
            .lifecycle
            .apply_notice(payment, attempt, outcome, &notice.amount, &mark)
            .await?;
        self.metrics.notice(effect.as_str());
        Ok(match effect {
            NoticeEffect::Deferred => NoticeOutcome::Deferred,
            NoticeEffect::Applied | NoticeEffect::Noted | NoticeEffect::Rejected => {
                NoticeOutcome::Applied
            }
        })
    }
}
