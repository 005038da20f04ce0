//! "Or similar seats": a fan's claim that, when the picked seats are gone, takes the
//! seats a refusal would offer instead (`domain::alternatives::offer`: as many seats,
//! nearest the picked ones, fresh from the refused call's own read), in the same call,
//! for a few rounds, as a fan would click "take these instead" — without the round trip
//! back to the fan, in which the offered seats go too.

use super::HoldsService;
use crate::domain::{Claim, Claimant, Hold, SeatSet};
use crate::error::Error;

/// Claims made in one call at most: the fan's seats, then offered seats twice.
pub const SIMILAR_ROUNDS: u32 = 3;

impl HoldsService {
    /// Claims `claim.seats`, or, while those are taken, the seats offered in their place
    /// (same section, same count), up to [`SIMILAR_ROUNDS`] claims in all. Every round
    /// uses the claim's one hold key, so a retry of the call (same request id) finds
    /// the hold whichever round made it.
    ///
    /// # Errors
    /// As [`Self::claim`]; [`Error::SeatTaken`] names the last round's seats.
    pub async fn claim_or_similar(&self, claim: &Claim) -> Result<Hold, Error> {
        let mut claim = claim.clone();
        let mut round = 1;
        loop {
            match self.claim(&claim).await {
                Err(Error::SeatTaken { alternatives, .. })
                    if round < SIMILAR_ROUNDS && alternatives.len() == claim.seats.len() =>
                {
                    let ids: Vec<u64> = alternatives
                        .iter()
                        .filter_map(|s| u64::try_from(s.get()).ok())
                        .collect();
                    claim.seats = SeatSet::from_wire(&ids)
                        .map_err(|e| Error::CorruptRow(format!("offered seats: {e}")))?;
                    round += 1;
                }
                // A retried call whose first answer was lost: its hold may hold seats of
                // a later round. Any hold of the same section and size is that hold.
                Err(Error::RequestIdReused { hold }) => {
                    let Claimant::Fan { fan, .. } = &claim.claimant else {
                        return Err(Error::RequestIdReused { hold });
                    };
                    let made = self.get(hold, fan.as_str()).await?;
                    if made.section == claim.section && made.seats.len() == claim.seats.len() {
                        return Ok(made);
                    }
                    return Err(Error::RequestIdReused { hold });
                }
                other => return other,
            }
        }
    }
}
