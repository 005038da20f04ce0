//! A request id's one hold across shards. On one database a retry of a claim finds the
//! hold its request id made (the key's family, see `repeated`); with sections on
//! several, a retry may reach another database (best available by price category picks
//! its section anew; a ClaimSeats retry may name another section). So, with shards, a
//! fan's claim with a request id first looks for its family on every database and is
//! answered by the hold found there (`made_before`, as a retry on one database is),
//! and a new hold is looked for again once committed: if another hold of the family
//! exists on another database, the new one is withdrawn (`store::withdraw`) and its
//! claim answered `ABORTED`/`IN_PROGRESS` naming the other; the retry finds the hold
//! that stays. Of two attempts committed on two databases, the one that reads later
//! sees the other, so at most one hold stays; both may be withdrawn, and the retry
//! then claims anew; a retry that finds a hold while another of its request exists is
//! answered `IN_PROGRESS` too (one of the two is being withdrawn). A database that is
//! down is left out (`read_unless_down`).

use futures::future::join_all;

use super::HoldsService;
use crate::domain::{EventId, FanId, Hold, HoldKey, RequestId};
use crate::error::Error;
use crate::store;

/// Who withdraws a hold whose request made one on another database, in the seat history.
const ACTOR: &str = "holds: a request id holding on another database";

impl HoldsService {
    /// The hold `fan`'s `request` already made for `event` on any database, when the
    /// sections are on several (on one, the claim itself finds it).
    ///
    /// # Errors
    /// [`Error::Database`] when a database that is up did not answer in time.
    pub(super) async fn made_for_request(
        &self,
        event: EventId,
        fan: &FanId,
        request: Option<&RequestId>,
    ) -> Result<Option<HoldKey>, Error> {
        let Some(request) = request else {
            return Ok(None);
        };
        if self.shards.others().next().is_none() {
            return Ok(None);
        }
        let family = HoldKey::request_family(event, fan, request);
        self.other_of_family(family, None).await
    }

    /// `hold`, just made by a claim with a request id (`with_request`), unless the
    /// request made a hold on another database too.
    ///
    /// # Errors
    /// [`Error::RequestInProgress`] naming the other hold, after withdrawing `hold`;
    /// [`Error::Database`], after withdrawing `hold`, when a database that is up did
    /// not answer in time (or when the withdrawal fails).
    pub(super) async fn only_hold_of_request(
        &self,
        hold: Hold,
        with_request: bool,
    ) -> Result<Hold, Error> {
        if !with_request || self.shards.others().next().is_none() {
            return Ok(hold);
        }
        let other = match self.other_of_family(hold.key, Some(hold.key)).await {
            Ok(Some(other)) => other,
            Ok(None) => return Ok(hold),
            Err(unsure) => {
                // Uncounted is unchecked: the hold goes, and the fan asks again.
                self.withdraw(hold.key, ACTOR).await?;
                return Err(unsure);
            }
        };
        if self.withdraw(hold.key, ACTOR).await? == store::Withdrawal::Kept {
            return Ok(hold);
        }
        tracing::info!(hold_key = %hold.key, other = %other, "withdrawn: its request holds on another database");
        Err(Error::RequestInProgress { hold: Some(other) })
    }

    /// The request's hold `key` was found, then was gone when read: withdrawn by its own
    /// check since (with shards; rows are removed only then). The retry finds what
    /// stays.
    pub(super) fn withdrawn_meanwhile(&self, key: HoldKey, error: Error) -> Error {
        match error {
            Error::HoldNotFound if self.shards.others().next().is_some() => {
                tracing::debug!(hold_key = %key, "the request's hold was withdrawn meanwhile");
                Error::RequestInProgress { hold: None }
            }
            other => other,
        }
    }

    /// `hold`, made before by a request id and found again by its retry, unless another
    /// hold of the request exists on another database: two attempts raced, and one of
    /// them is being withdrawn by its own check.
    ///
    /// # Errors
    /// [`Error::RequestInProgress`] naming `hold` (nothing is withdrawn here: the
    /// retry finds the hold that stays); [`Error::Database`].
    pub(super) async fn uncontested(&self, hold: Hold) -> Result<Hold, Error> {
        if self.shards.others().next().is_none() {
            return Ok(hold);
        }
        match self.other_of_family(hold.key, Some(hold.key)).await? {
            Some(_) => Err(Error::RequestInProgress {
                hold: Some(hold.key),
            }),
            None => Ok(hold),
        }
    }

    /// A hold of `family`'s family other than `except` on any database.
    async fn other_of_family(
        &self,
        family: HoldKey,
        except: Option<HoldKey>,
    ) -> Result<Option<HoldKey>, Error> {
        let reads = self.shards.all().map(|(shard, pool)| {
            self.read_unless_down(shard, pool, store::other_of_family(pool, family, except))
        });
        let found: Result<Vec<_>, Error> = join_all(reads).await.into_iter().collect();
        Ok(found?.into_iter().flatten().flatten().next())
    }
}
