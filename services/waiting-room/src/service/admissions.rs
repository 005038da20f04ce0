//! Admissions given back (the fan), taken back (staff, or the no-show deadline) and
//! used (holds reports claims): each frees the place under the caps and revokes the
//! token in one store script; holds learns the revocations from
//! [`WaitingRoomService::revocations`].

use crate::domain::{EventId, FanId};
use crate::error::Error;
use crate::store::{Revocations, Taken, Target};

use super::WaitingRoomService;

/// Most revocations one `ListRevokedAdmissions` page carries.
pub const REVOCATIONS_PER_PAGE: u32 = 10_000;

impl WaitingRoomService {
    /// `fan` gives back its admission to `event`, the token with `jti` expiring at
    /// `exp_ms` (Unix ms): the token is revoked and its place goes to the queue.
    /// Idempotent: only the first call frees the place.
    ///
    /// # Errors
    /// As the store ([`Error::EventNotFound`], Redis).
    pub async fn release(
        &self,
        event: &EventId,
        fan: &FanId,
        jti: &str,
        exp_ms: u64,
    ) -> Result<Taken, Error> {
        let taken = self
            .store
            .revoke(event, Target::Token { jti, exp_ms })
            .await?;
        self.taken_back(event, fan, &taken).await;
        Ok(taken)
    }

    /// Staff take back `target`'s admission to `event` (a bot): as
    /// [`WaitingRoomService::release`]; taken back by fan, a fan not yet admitted is
    /// handed no token once admitted (its place is freed when it asks).
    ///
    /// # Errors
    /// As the store.
    pub async fn revoke(&self, event: &EventId, target: Target<'_>) -> Result<Taken, Error> {
        let taken = self.store.revoke(event, target).await?;
        if let Target::Fan(fan) = target {
            self.taken_back(event, fan, &taken).await;
        } else if taken.freed {
            self.metrics.completed(event);
            self.cache.invalidate(event);
        }
        Ok(taken)
    }

    /// Holds reports that the admissions of `jtis` were used (a claim succeeded): they
    /// are no no-shows. Returns how many no-show deadlines were dropped.
    ///
    /// # Errors
    /// As the store.
    pub async fn mark_used(&self, event: &EventId, jtis: &[String]) -> Result<u64, Error> {
        self.store.mark_used(event, jtis).await
    }

    /// `event`'s revoked admissions after version `since` of `epoch` (every one when
    /// the epoch is not the queue's), a page of at most [`REVOCATIONS_PER_PAGE`].
    ///
    /// # Errors
    /// As the store.
    pub async fn revocations(
        &self,
        event: &EventId,
        epoch: &str,
        since: u64,
    ) -> Result<Revocations, Error> {
        self.store
            .revocations(event, epoch, since, REVOCATIONS_PER_PAGE)
            .await
    }

    /// Forgets this replica's copy of `fan`'s token, so its polls hear that the
    /// admission is gone, and counts a freed place.
    async fn taken_back(&self, event: &EventId, fan: &FanId, taken: &Taken) {
        self.admitted
            .invalidate(&(event.clone(), fan.clone()))
            .await;
        if taken.freed {
            self.metrics.completed(event);
            self.cache.invalidate(event);
        }
    }
}
