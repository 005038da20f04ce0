//! The per-fan limits across shards. `holds.claim` checks one hold per admission and
//! the event's `max_seats_per_fan` under the fan's advisory lock, but a lock and a
//! count reach one database only: with sections on several, a fan could hold on each.
//!
//! So, with shards, a fan's hold is checked again after its claim has committed: the
//! fan's seats and the admission's other live holds are read on every database at once
//! (one statement each, in parallel), and a hold that takes the fan past a limit is
//! released at once and its claim refused as the database would have refused it.
//! Reading after committing is what makes this safe under concurrency: of two claims
//! that commit on different databases, the one whose reads start last sees the other,
//! so among the holds that stay, the last to read saw them all within the limits, as
//! long as every committed hold is checked. Two claims racing may both be refused (the
//! fan asks again). Between its commit and its release such a hold occupies its seats
//! for a few milliseconds. Not covered yet (docs/architecture.md, "Not yet"): a caller
//! gone between commit and check leaves its hold unchecked, and a retry with the same
//! request id is answered the hold as it stands.
//!
//! A database that cannot be read (a shard restarting) is left out of the count, with a
//! warning: an outage of one shard must not stop the claims of every other, which
//! never needed it. Only seats on the database that was down can then go unseen.

use futures::future::join_all;

use crate::domain::{FanId, Hold, Limit};
use crate::error::Error;
use crate::store;

use super::HoldsService;

/// Who releases a hold past a limit, in the seat history.
const ACTOR: &str = "holds: over a per-fan limit across shards";

impl HoldsService {
    /// `hold`, just claimed by `fan` with admission `admission_jti`, if the fan stays
    /// within the event's limits counted on every database; without shards, `hold` as
    /// it is (the claim itself counted everything).
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] (`holds_per_admission` naming the other hold, or
    /// `seats_per_fan`) after releasing `hold`; [`Error::Database`] for a failed
    /// release (the hold then lapses with its TTL).
    pub(super) async fn within_fan_limits(
        &self,
        hold: Hold,
        fan: &FanId,
        admission_jti: &str,
    ) -> Result<Hold, Error> {
        if self.shards.others().next().is_none() {
            return Ok(hold);
        }
        let reads = self.shards.all().map(|(shard, pool)| async move {
            let read = store::fan_totals(pool, hold.event, fan, admission_jti, hold.key).await;
            if let Err(error) = &read {
                tracing::warn!(shard, %error, "fan's totals unread: that database is left out of the per-fan limits");
            }
            read.ok()
        });
        let totals: Vec<_> = join_all(reads).await.into_iter().flatten().collect();
        let Some(refusal) = over_limit(&totals) else {
            return Ok(hold);
        };
        tracing::info!(hold_key = %hold.key, %refusal, "released: past a per-fan limit across shards");
        self.admin_release(hold.key, store::ReleaseScope::Any, ACTOR)
            .await?;
        Err(refusal)
    }
}

/// The refusal the totals of every database call for, if any: another live hold of
/// the admission first (as `holds.claim` checks it), then the fan's seats.
fn over_limit(totals: &[store::FanTotals]) -> Option<Error> {
    if let Some(other) = totals.iter().find_map(|t| t.other_admission_hold) {
        return Some(Error::LimitExceeded {
            limit: Limit::HoldsPerAdmission,
            max: 1,
            hold: Some(other),
        });
    }
    let max = totals.iter().find_map(|t| t.max_seats_per_fan)?;
    let seats: i64 = totals.iter().map(|t| t.seats).sum();
    (seats > i64::from(max)).then(|| Error::LimitExceeded {
        limit: Limit::SeatsPerFan,
        max: u64::try_from(max).unwrap_or(0),
        hold: None,
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
}
