//! A fan's claim asked again after its answer was lost. One hold per admission token
//! makes the admission the claim's idempotency key: when a claim is refused for
//! `holds_per_admission`, the admission's live hold answers it if it is what this claim
//! asked for, and otherwise the refusal names that hold (metadata `hold_key`) so the
//! fan can find it (`GetHold`, `ListHolds`) instead of waiting for it to lapse.

use super::HoldsService;
use crate::domain::{EventId, Hold, Limit};
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
        let mut conn = self.pool.acquire().await?;
        let live = store::live_holds(&mut conn, event, fan, Some(admission_jti)).await?;
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
}
