//! The marks of checks across shards (`store::hold_checks`): a hold whose check of the
//! per-fan and code limits across databases passed is marked on its database, so a
//! retry of its request is answered with it without checking it again (a second check
//! could count a racing claim against a hold that passed), a retry while its own check
//! may still run is told to ask again, and a hold never marked (its process killed
//! between the commit and the check, a check cut off) is checked by the sweeper.

use std::time::Duration;

use super::HoldsService;
use super::fan_limits::Claimer;
use crate::domain::{Hold, HoldKey, HoldStatus};
use crate::error::Error;
use crate::shards;
use crate::store;

/// How long after its claim a hold never marked checked may still have its own check
/// running (the count's reads wait at most 750 ms each, with room for a withdrawal):
/// a retry is told to ask again until then, and the sweeper leaves it alone.
pub const CHECK_GRACE: Duration = Duration::from_secs(15);

/// Marks dropped per database and pass once older than a day.
const FORGET_BATCH: i64 = 10_000;

impl HoldsService {
    /// `hold`, made earlier by the same request id and found again by its retry: as it
    /// is once its check passed (or when it is no longer held); while its own check may
    /// still run (younger than [`CHECK_GRACE`]) the retry is told to ask again; older and
    /// never marked checked (the process was killed between the commit and the check),
    /// checked here as [`Self::within_fan_limits`].
    ///
    /// # Errors
    /// [`Error::RequestInProgress`] naming the hold while its check may still run; as
    /// [`Self::within_fan_limits`].
    pub(super) async fn rechecked(&self, hold: Hold, claimer: Claimer<'_>) -> Result<Hold, Error> {
        if self.shards.is_single() || hold.status != HoldStatus::Held || hold.expires_in_ms == 0 {
            return Ok(hold);
        }
        let pool = shards::for_key(&self.shards, hold.key).await?;
        let state = store::hold_checks::check_state(pool, hold.key).await?;
        if state.checked {
            Ok(hold)
        } else if u128::try_from(state.age_ms).unwrap_or(0) < CHECK_GRACE.as_millis() {
            Err(Error::RequestInProgress {
                hold: Some(hold.key),
            })
        } else {
            self.within_fan_limits(hold, claimer).await
        }
    }

    /// Checks the fans' holds that were never marked checked and are older than
    /// [`CHECK_GRACE`] (a process killed between a claim's commit and its check, a
    /// check cut off), up to `batch` per database; answers how many were checked and
    /// how many of those were withdrawn. Nothing to do on one database.
    ///
    /// # Errors
    /// [`Error::Database`] from the first database whose holds could not be listed (the
    /// others are checked all the same).
    pub async fn check_unchecked_holds(&self, batch: u32) -> Result<(u64, u64), Error> {
        if self.shards.is_single() {
            return Ok((0, 0));
        }
        let grace = i64::try_from(CHECK_GRACE.as_millis()).unwrap_or(i64::MAX);
        let (mut checked, mut withdrawn) = (0, 0);
        let mut failure = None;
        for (shard, pool) in self.shards.all() {
            let found = match store::hold_checks::unchecked(pool, grace, i64::from(batch)).await {
                Ok(found) => found,
                Err(error) => {
                    tracing::warn!(shard, %error, "unchecked holds not listed");
                    failure.get_or_insert(error);
                    continue;
                }
            };
            for each in found {
                match self.check_one_late(pool, &each).await {
                    Ok(Some(stands)) => {
                        checked += 1;
                        withdrawn += u64::from(!stands);
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(shard, hold_key = %each.key, %error, "a hold left unchecked could not be checked; the next pass tries again");
                    }
                }
            }
        }
        failure.map_or(Ok((checked, withdrawn)), Err)
    }

    /// The unchecked hold `each` on `pool` checked now: `Some(true)` when it stands,
    /// `Some(false)` when withdrawn, `None` when it ended meanwhile.
    ///
    /// # Errors
    /// [`Error::Database`]: the hold is left as it is.
    async fn check_one_late(
        &self,
        pool: &sqlx::PgPool,
        each: &store::hold_checks::Unchecked,
    ) -> Result<Option<bool>, Error> {
        let mut conn = pool.acquire().await?;
        let hold = match store::get(&mut conn, each.key, each.fan.as_str()).await {
            Ok(hold) => hold,
            Err(Error::HoldNotFound) => return Ok(None),
            Err(error) => return Err(error),
        };
        drop(conn);
        let claimer = Claimer {
            fan: &each.fan,
            admission_jti: &each.admission_jti,
            code: each.code_sha256,
        };
        match self.checked_late(hold, claimer).await {
            Ok(_) => Ok(Some(true)),
            Err(Error::LimitExceeded { .. }) => Ok(Some(false)),
            Err(error) => Err(error),
        }
    }

    /// Records that `key`'s check passed, on the hold's database; a failure is logged
    /// (the hold is then checked again by the sweeper or its retry, which count it the
    /// same).
    pub(super) async fn mark_checked(&self, key: HoldKey) {
        let marked = async {
            let pool = shards::for_key(&self.shards, key).await?;
            store::hold_checks::mark_checked(pool, key).await
        };
        if let Err(error) = marked.await {
            tracing::warn!(hold_key = %key, %error, "a hold's passed check not recorded; it is checked again later");
        }
    }

    /// Drops the marks older than a day on every database (a hold lives far less);
    /// answers how many.
    ///
    /// # Errors
    /// [`Error::Database`] from the first database that failed (the others are done).
    pub async fn forget_old_checks(&self) -> Result<u64, Error> {
        let mut forgotten = 0;
        let mut failure = None;
        for (shard, pool) in self.shards.all() {
            match store::hold_checks::forget_old_checks(pool, FORGET_BATCH).await {
                Ok(n) => forgotten += n,
                Err(error) => {
                    tracing::warn!(shard, %error, "old check marks not dropped");
                    failure.get_or_insert(error);
                }
            }
        }
        failure.map_or(Ok(forgotten), Err)
    }
}
