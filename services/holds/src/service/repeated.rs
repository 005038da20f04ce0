//! A fan's claim asked again after its answer was lost.
//!
//! With a request id, the claim's hold key is derived from it (`Claim::hold_key`), and
//! the database answers a retry `Claimed::Repeated`: the hold that key names answers
//! it, whatever its status now, if it is what this claim asks for; a request id used
//! for another claim is refused (`IDEMPOTENCY_KEY_REUSED`), as Stripe refuses an
//! idempotency key reused with other parameters.
//!
//! Without one, one hold per admission token makes the admission the claim's
//! idempotency key: when a claim is refused for `holds_per_admission`, the admission's
//! live hold answers it if it is what this claim asked for, and otherwise the refusal
//! names that hold (metadata `hold_key`) so the fan can find it (`GetHold`,
//! `ListHolds`) instead of waiting for it to lapse.

use super::HoldsService;
use super::fan_limits::Claimer;
use crate::domain::{EventId, Hold, HoldKey, Limit};
use crate::error::Error;
use crate::store;

impl HoldsService {
    /// `refused`, a fan's claim refusal, answered by the hold the same admission already
    /// made when `asked` says it is the one this claim asks for.
    ///
    /// # Errors
    /// `refused` itself for any other refusal; [`Error::LimitExceeded`] naming the
    /// admission's hold when it is not what was asked; [`Error::Database`].
    pub(super) async fn answered_before(
        &self,
        refused: Error,
        event: EventId,
        fan: &str,
        admission_jti: &str,
        asked: impl Fn(&Hold) -> bool,
    ) -> Result<Hold, Error> {
        let Error::LimitExceeded {
            limit: Limit::HoldsPerAdmission,
            max,
            ..
        } = refused
        else {
            return Err(refused);
        };
        let mut live = Vec::new();
        for (_, pool) in self.shards.all() {
            let mut conn = pool.acquire().await?;
            live.extend(store::live_holds(&mut conn, event, fan, Some(admission_jti)).await?);
        }
        match live.into_iter().next() {
            Some(hold) if asked(&hold) => {
                tracing::debug!(hold_key = %hold.key, "claim asked again: its hold answers");
                Ok(hold)
            }
            other => Err(Error::LimitExceeded {
                limit: Limit::HoldsPerAdmission,
                max,
                hold: other.map(|hold| hold.key),
            }),
        }
    }

    /// The hold `key` that `fan`'s request id made before, as [`Self::made_before`],
    /// when no other hold of the request is on another database (`uncontested`),
    /// checked again against the per-fan limits while held (`rechecked`).
    ///
    /// # Errors
    /// As [`Self::made_before`], `uncontested` and `within_fan_limits`.
    pub(super) async fn answer_repeated(
        &self,
        key: HoldKey,
        claimer: Claimer<'_>,
        asked: impl Fn(&Hold) -> bool,
    ) -> Result<Hold, Error> {
        let hold = self
            .made_before(key, claimer.fan.as_str(), asked)
            .await
            .map_err(|error| self.withdrawn_meanwhile(key, error))?;
        let hold = self.uncontested(hold).await?;
        self.rechecked(hold, claimer).await
    }

    /// The hold `key` of `fan`, made by an earlier claim with the same request id,
    /// when `asked` says it is what this claim asks for.
    ///
    /// # Errors
    /// [`Error::RequestIdReused`] when it is not; as `store::get`.
    pub(super) async fn made_before(
        &self,
        key: HoldKey,
        fan: &str,
        asked: impl Fn(&Hold) -> bool,
    ) -> Result<Hold, Error> {
        let mut conn = crate::shards::for_key(&self.shards, key)
            .await?
            .acquire()
            .await?;
        let hold = store::get(&mut conn, key, fan).await?;
        if asked(&hold) {
            tracing::debug!(hold_key = %key, "claim repeated with its request id");
            Ok(hold)
        } else {
            Err(Error::RequestIdReused { hold: key })
        }
    }
}
