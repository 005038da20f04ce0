//! The returns queue in the service: a best-available request that finds no fitting
//! block while seats are held may wait in line for returned seats instead of being
//! answered `SEAT_TAKEN`, and the sweeper serves the line in order as holds lapse.
//!
//! Serving a queued claim is the fan's own claim, made with its request id: the
//! database decides it as any claim (limits, one hold per admission, the ordered
//! insert), and a claim served twice (two replicas, a retry) finds the hold it made.

use std::collections::HashMap;

use super::HoldsService;
use crate::domain::best::BestRequest;
use crate::domain::{EventId, FanId, Hold};
use crate::error::Error;
use crate::store::{self, QueuedClaim};

/// Queued claims of one event that may find no block in a row (their section had the
/// seats, not side by side) before the rest of that event's line waits for the next
/// pass: a bound on the pass's cost.
const MISSES_PER_EVENT: u32 = 16;

/// The admission a claim is made under.
#[derive(Debug, Clone, Copy)]
pub struct Admission<'a> {
    /// The admission token's `jti`.
    pub jti: &'a str,
    /// Its `exp`, Unix seconds: a queued claim leaves the line then.
    pub expires_at: u64,
}

/// What a best-available request came to.
#[derive(Debug, Clone)]
pub enum BestAnswer {
    /// Seats held for the fan.
    Held(Hold),
    /// In line for returned seats, at this 1-based position of the event's line.
    Waiting {
        /// 1 = next to be served.
        position: u64,
    },
}

/// What one pass over the queue did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServedReturns {
    /// Queued claims that now have their hold.
    pub served: u64,
    /// Queued claims refused for good (a limit, the event off sale) and taken off the
    /// line: asked again, the fan learns why.
    pub refused: u64,
    /// Queued claims dropped because their admission expired.
    pub lapsed: u64,
}

impl HoldsService {
    /// Best available as [`claim_best`](Self::claim_best); with `wait`, a request that
    /// finds no fitting block, and no other section with room for it, while other fans
    /// hold seats of the event is queued for returned seats (asked again, it keeps its
    /// place) and answered with its position. A request that another section could
    /// serve is answered `SEAT_TAKEN` naming it, as without `wait`: the fan chooses.
    ///
    /// # Errors
    /// As [`claim_best`](Self::claim_best); [`Error::InvalidField`] (`request_id`) for
    /// `wait` without a request id; [`Error::NoBlockLeft`] when another section has room,
    /// or nothing is held (no seat can come back).
    pub async fn claim_best_or_wait(
        &self,
        request: &BestRequest,
        fan: &FanId,
        admission: Admission<'_>,
        wait: bool,
    ) -> Result<BestAnswer, Error> {
        let request_id = match (&request.request, wait) {
            (_, false) => None,
            (Some(id), true) => Some(id),
            (None, true) => {
                return Err(Error::invalid(
                    "request_id",
                    "required with wait_for_returns: the queued claim is found by it",
                ));
            }
        };
        match self.claim_best(request, fan, admission.jti, None).await {
            Ok(hold) => Ok(BestAnswer::Held(hold)),
            Err(refused @ Error::NoBlockLeft { .. }) => {
                let Some(request_id) = request_id else {
                    return Err(refused);
                };
                if matches!(&refused, Error::NoBlockLeft { other_sections, .. } if !other_sections.is_empty())
                {
                    return Err(refused);
                }
                let held_on_shards = self.seats_held_on_shards(request.event).await?;
                let queued = store::queue_for_returns(
                    self.shards.main(),
                    request,
                    request_id,
                    fan,
                    admission.jti,
                    admission.expires_at,
                    held_on_shards,
                )
                .await?;
                match queued {
                    Some(position) => Ok(BestAnswer::Waiting { position }),
                    None => Err(refused),
                }
            }
            Err(other) => Err(other),
        }
    }

    /// Whether seats of `event` are held on a shard besides the main database (the
    /// returns queue lives on the main one, which checks its own holds itself): one
    /// read per shard, none without shards.
    ///
    /// # Errors
    /// [`Error::Database`].
    async fn seats_held_on_shards(&self, event: EventId) -> Result<bool, Error> {
        for (_, pool) in self.shards.others() {
            if store::seats_held(pool, event).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether `claim`'s fan got seats on a shard besides the main database with the
    /// claim's admission since `since` (Unix seconds): one read per shard, none
    /// without shards.
    ///
    /// # Errors
    /// [`Error::Database`].
    async fn claimed_on_shards_since(
        &self,
        claim: &QueuedClaim,
        since: f64,
    ) -> Result<bool, Error> {
        for (_, pool) in self.shards.others() {
            let event = claim.request.event;
            if store::claimed_since(pool, event, &claim.fan, &claim.admission_jti, since).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Takes `fan`'s claim made with admission `admission_jti` out of the returns queue;
    /// whether there was one (a claim served before keeps its hold).
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn leave_returns_queue(
        &self,
        fan: &FanId,
        admission_jti: &str,
    ) -> Result<bool, Error> {
        store::leave_returns_queue(self.shards.main(), fan, admission_jti).await
    }

    /// Serves up to `limit` queued claims, in line order, with the seats free now:
    /// each whose target has room for it (free seats counted at most 1 s ago; the others
    /// are passed over, costing nothing) is claimed for its fan; one that holds seats or
    /// is refused for good leaves the line, one that finds no block stays.
    ///
    /// # Errors
    /// [`Error::Database`] (claims already served stay served).
    pub async fn serve_returns(&self, limit: u32) -> Result<ServedReturns, Error> {
        let mut pass = ServedReturns {
            lapsed: store::drop_lapsed_admissions(self.shards.main()).await?,
            ..ServedReturns::default()
        };
        let queued = store::queued_claims(self.shards.main(), limit).await?;
        let mut misses: HashMap<EventId, u32> = HashMap::new();
        for claim in queued {
            let event = claim.request.event;
            if misses.get(&event).is_some_and(|m| *m >= MISSES_PER_EVENT) {
                continue;
            }
            match self.target_has_room(&claim.request).await {
                Ok(false) => continue,
                Ok(true) => {}
                Err(error @ Error::Database(_)) => return Err(error),
                // The event or target is gone: the claim below meets the same refusal
                // and takes the entry off the line.
                Err(_) => {}
            }
            // The entry stays locked while its claim runs, so a fan leaving the line
            // meanwhile waits and then finds the hold, never one made after it left.
            let mut entry = self.shards.main().begin().await?;
            let Some((current, queued_at)) = store::lock_queued(&mut entry, claim.place).await?
            else {
                continue;
            };
            if Some(current.as_str()) != claim.request.request.as_ref().map(|id| id.as_str()) {
                // Asked again with another claim since the line was read.
                continue;
            }
            if self.claimed_on_shards_since(&claim, queued_at).await? {
                // Seats another way meanwhile, on a shard: out of the line, as on the
                // main database the claim's own trigger takes it out.
                store::dequeue(&mut *entry, claim.place).await?;
                entry.commit().await?;
                continue;
            }
            let answer = self
                .claim_best(&claim.request, &claim.fan, &claim.admission_jti, None)
                .await;
            match answer {
                Ok(hold) => {
                    tracing::debug!(hold_key = %hold.key, place = claim.place, "served a queued claim");
                    store::dequeue(&mut *entry, claim.place).await?;
                    pass.served += 1;
                    misses.remove(&event);
                }
                Err(Error::NoBlockLeft { .. }) => *misses.entry(event).or_default() += 1,
                // Busy, not refused: the entry keeps its place, and the event waits for
                // the next pass.
                Err(Error::Contention | Error::Overloaded { .. }) => {
                    misses.insert(event, MISSES_PER_EVENT);
                }
                Err(error @ Error::Database(_)) => return Err(error),
                Err(refused) => {
                    tracing::debug!(place = claim.place, %refused, "queued claim refused");
                    store::dequeue(&mut *entry, claim.place).await?;
                    pass.refused += 1;
                }
            }
            entry.commit().await?;
        }
        Ok(pass)
    }
}
