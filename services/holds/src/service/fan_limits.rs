//! The per-fan limits across shards. `holds.claim` checks one hold per admission and
//! the event's `max_seats_per_fan` under the fan's advisory lock, but a lock and a
//! count reach one database only: with sections on several, a fan could hold on each.
//!
//! So, with shards, a fan's hold is checked again after its claim has committed: the
//! fan's seats and the admission's other live holds are read on every database at once
//! (one statement each, in parallel), and a hold that takes the fan past a limit is
//! withdrawn at once (`store::withdraw`: released, then its rows removed, so a retry
//! with the same request id is claimed and checked anew) and its claim refused as the
//! database would have refused it. Reading after committing is what makes this safe
//! under concurrency: of two claims that commit on different databases, the one whose
//! reads start last sees the other, so among the holds that stay, the last to read saw
//! them all within the limits, as long as every committed hold is checked. Two claims
//! racing may both be refused (the fan asks again). Between its commit and its
//! withdrawal such a hold occupies its seats for a few milliseconds.
//!
//! Every committed hold is checked: the claim and its check run on a task of their own
//! (`detached`), so a caller that goes away does not stop them; a hold whose check
//! passed is marked, and one never marked (a process killed between commit and check)
//! is checked by its retry or the sweeper (`hold_checks`).
//!
//! A database that does not answer within 500 ms is probed with a new connection
//! (`unread`): one that refuses it as a database that is down does (no server, shutting
//! down or starting up, not accepting connections) is left out of the count, with a
//! warning, since an outage of one shard must not stop the claims of every other, and
//! only seats on the database that is down can go unseen. One that is up but busy is
//! not left out: the claim is withdrawn and refused as retryable (`UNAVAILABLE`), since
//! counting without it could let a fan past a limit.

use std::future::Future;

use futures::future::join_all;
use tracing::Instrument;

use crate::domain::{FanId, Hold, Limit};
use crate::error::Error;
use crate::store;

use super::HoldsService;

/// A fan's claim as the checks across shards count it: the fan, the admission, and the
/// presale code (or channel key) the claim was made with, if any.
#[derive(Debug, Clone, Copy)]
pub(super) struct Claimer<'a> {
    /// The fan.
    pub fan: &'a FanId,
    /// The admission token's `jti`.
    pub admission_jti: &'a str,
    /// The SHA-256 of the presale code or channel key, whose limits count over every
    /// database too.
    pub code: Option<[u8; 32]>,
}

/// Who withdraws a hold past a limit, in the seat history.
const ACTOR: &str = "holds: over a per-fan limit across shards";

impl HoldsService {
    /// `hold`, just claimed by `fan` with admission `admission_jti`, if the fan stays
    /// within the event's limits counted on every database; without shards, `hold` as
    /// it is (the claim itself counted everything). A hold that cannot be withdrawn
    /// (its payment started) stands and is the answer; one already withdrawn (another
    /// check of it, a retry's) is refused as if withdrawn here.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] (`holds_per_admission` naming the other hold, or
    /// `seats_per_fan`) after withdrawing `hold`; [`Error::Database`] when a database
    /// that is up did not give its count (after withdrawing `hold`: retryable), or for
    /// a failed withdrawal (the hold then lapses with its TTL).
    pub(super) async fn within_fan_limits(
        &self,
        hold: Hold,
        claimer: Claimer<'_>,
    ) -> Result<Hold, Error> {
        if self.shards.others().next().is_none() {
            return Ok(hold);
        }
        match self.counted_across(&hold, claimer).await {
            Ok(None) => {
                self.mark_checked(hold.key).await;
                Ok(hold)
            }
            Ok(Some(refusal)) | Err(refusal) => self.withdrawn(hold, refusal).await,
        }
    }

    /// `hold` checked as [`Self::within_fan_limits`] checks a claim, except that a
    /// database that is up but did not give its count leaves the hold as it is (the
    /// sweeper's check of a hold left unchecked: its fan was answered long ago and is
    /// not there to retry); answers whether it stands.
    ///
    /// # Errors
    /// As [`Self::within_fan_limits`], the count's failure without withdrawing.
    pub(super) async fn checked_late(
        &self,
        hold: Hold,
        claimer: Claimer<'_>,
    ) -> Result<Hold, Error> {
        match self.counted_across(&hold, claimer).await? {
            None => {
                self.mark_checked(hold.key).await;
                Ok(hold)
            }
            Some(refusal) => self.withdrawn(hold, refusal).await,
        }
    }

    /// The refusal the counts of every database call for `hold` of `claimer`, if any.
    ///
    /// # Errors
    /// [`Error::Database`] when a database that is up did not give its count.
    async fn counted_across(
        &self,
        hold: &Hold,
        claimer: Claimer<'_>,
    ) -> Result<Option<Error>, Error> {
        let code = claimer.code.as_ref().map(|c| &c[..]);
        let reads = self.shards.all().map(|(shard, pool)| {
            let read = store::fan_totals(
                pool,
                hold.event,
                claimer.fan,
                claimer.admission_jti,
                hold.key,
                code,
            );
            self.read_unless_down(shard, pool, read)
        });
        let counted: Result<Vec<_>, Error> = join_all(reads).await.into_iter().collect();
        let totals: Vec<_> = counted?.into_iter().flatten().collect();
        Ok(over_limit(&totals))
    }

    /// `hold` withdrawn for `refusal`, answered `refusal`; a hold that cannot be
    /// withdrawn (its payment started) stands, marked checked, and is the answer.
    async fn withdrawn(&self, hold: Hold, refusal: Error) -> Result<Hold, Error> {
        if self.withdraw(hold.key, ACTOR).await? == store::Withdrawal::Kept {
            self.mark_checked(hold.key).await;
            return Ok(hold);
        }
        tracing::info!(hold_key = %hold.key, %refusal, "withdrawn: past a per-fan limit across shards, or not counted");
        Err(refusal)
    }
}

/// Runs `work` on a task of its own and waits for it: dropping the waiting future (a
/// cancelled call) does not stop the work. A panic in `work` is resumed here.
pub(super) async fn detached<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
) -> T {
    match tokio::spawn(work.in_current_span()).await {
        Ok(value) => value,
        Err(error) => std::panic::resume_unwind(error.into_panic()),
    }
}

/// One limit's seats counted on a database, and the limit there (`None`: no limit).
type Counted = fn(&store::FanTotals) -> (i64, Option<i32>);

/// The refusal the totals of every database call for, if any: another live hold of
/// the admission first (as `holds.claim` checks it), then the presale code's seats, the
/// code's seats for this fan, and the fan's seats.
fn over_limit(totals: &[store::FanTotals]) -> Option<Error> {
    if let Some(other) = totals.iter().find_map(|t| t.other_admission_hold) {
        return Some(Error::LimitExceeded {
            limit: Limit::HoldsPerAdmission,
            max: 1,
            hold: Some(other),
        });
    }
    let limits: [(Limit, Counted); 3] = [
        (Limit::CodeSeats, |t| (t.code_seats, t.code_max_seats)),
        (Limit::CodeSeatsPerFan, |t| {
            (t.code_seats_by_fan, t.code_max_seats_per_fan)
        }),
        (Limit::SeatsPerFan, |t| (t.seats, t.max_seats_per_fan)),
    ];
    limits.into_iter().find_map(|(limit, of)| {
        let max = totals.iter().find_map(|t| of(t).1)?;
        let seats: i64 = totals.iter().map(|t| of(t).0).sum();
        (seats > i64::from(max)).then(|| Error::LimitExceeded {
            limit,
            max: u64::try_from(max).unwrap_or(0),
            hold: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::HoldKey;
    use store::FanTotals;

    fn totals(seats: i64, other: Option<HoldKey>) -> FanTotals {
        FanTotals {
            seats,
            other_admission_hold: other,
            max_seats_per_fan: Some(4),
            ..FanTotals::default()
        }
    }

    #[test]
    fn seats_are_summed_over_every_database() {
        assert!(over_limit(&[totals(2, None), totals(2, None)]).is_none());
        let refused = over_limit(&[totals(2, None), totals(3, None)]);
        assert!(matches!(
            refused,
            Some(Error::LimitExceeded {
                limit: Limit::SeatsPerFan,
                max: 4,
                hold: None
            })
        ));
    }

    #[test]
    fn another_hold_of_the_admission_is_named() {
        let other = HoldKey::from(uuid::Uuid::from_u128(7));
        let refused = over_limit(&[totals(1, None), totals(1, Some(other))]);
        assert!(matches!(
            refused,
            Some(Error::LimitExceeded {
                limit: Limit::HoldsPerAdmission,
                max: 1,
                hold: Some(key)
            }) if key == other
        ));
    }

    #[test]
    fn an_unknown_event_has_no_seat_limit_to_pass() {
        let unknown = FanTotals {
            seats: 100,
            ..FanTotals::default()
        };
        assert!(over_limit(&[unknown]).is_none());
    }

    #[test]
    fn a_codes_seats_are_summed_over_every_database_before_the_fans() {
        let code = |seats, by_fan| FanTotals {
            seats: by_fan,
            max_seats_per_fan: Some(4),
            code_seats: seats,
            code_seats_by_fan: by_fan,
            code_max_seats: Some(6),
            code_max_seats_per_fan: Some(2),
            ..FanTotals::default()
        };
        assert!(over_limit(&[code(3, 1), code(3, 1)]).is_none());
        let limit = |refused: Option<Error>| match refused {
            Some(Error::LimitExceeded { limit, max, .. }) => Some((limit, max)),
            _ => None,
        };
        assert_eq!(
            limit(over_limit(&[code(4, 0), code(3, 1)])),
            Some((Limit::CodeSeats, 6))
        );
        assert_eq!(
            limit(over_limit(&[code(1, 1), code(2, 2)])),
            Some((Limit::CodeSeatsPerFan, 2))
        );
        // A channel's key has no limits of its own: only the fan's seats count.
        let key = |seats| FanTotals {
            seats,
            max_seats_per_fan: Some(4),
            code_seats: 50,
            code_seats_by_fan: seats,
            ..FanTotals::default()
        };
        assert!(over_limit(&[key(2), key(2)]).is_none());
        assert_eq!(
            limit(over_limit(&[key(2), key(3)])),
            Some((Limit::SeatsPerFan, 4))
        );
    }
}
