//! Best available with a presale code or a channel's key: the rounds of one request
//! among the seats the code's channel still has free. Each round reads those seats
//! (on the database of each section: a channel's seats live with their section), ranks the blocks that fit the request
//! over them as best available does over a section's free seats, and sends the best
//! ones of the best block's section to `holds.claim_best_with_code`, which tries them
//! in order under the code's and the fan's limits in one round trip. A round whose
//! blocks were all taken by other fans of the channel meanwhile reads again; a request
//! for which the channel has no fitting block left is answered `SEAT_TAKEN` with what
//! is still possible among its seats.

use std::collections::BTreeMap;

use stadium_db::{MAIN, retry_transient};

use super::HoldsService;
use super::best::{Answer, BLOCKS_PER_CALL, GatePlace, MAX_ROUNDS, round_key, within_limits};
use crate::domain::best::{BestRequest, Block, Hints};
use crate::domain::{EventId, FanId, Hold, PresaleCode, SectionId};
use crate::error::Error;
use crate::store;

impl HoldsService {
    /// The rounds of `request` for `fan` (admitted with `admission_jti`) among the
    /// seats of the channel `code` opens, as described in the module documentation.
    pub(super) async fn channel_rounds(
        &self,
        request: &BestRequest,
        fan: &FanId,
        admission_jti: &str,
        code: &PresaleCode,
    ) -> Result<Hold, Answer> {
        let layout = self.event_layout(request.event).await?;
        let sections = within_limits(&layout, request)?;
        let mut place = GatePlace::default();
        for _ in 0..MAX_ROUNDS {
            let free = self
                .channel_free_seats(request.event, code, &sections)
                .await?;
            let hints: Hints = sections
                .iter()
                .filter_map(|&section| Some((section, layout.only_available(section, &free)?)))
                .collect();
            let ranked = layout.blocks(request, &sections, &hints, BLOCKS_PER_CALL);
            let Some(section) = ranked.first().map(|block| block.section) else {
                let possible = layout.possible(request, &sections, &hints);
                return Err(Answer::Refused(Error::NoBlockLeft {
                    fewer_seats: possible.fewer_seats,
                    not_together: possible.not_together,
                    other_sections: Vec::new(),
                }));
            };
            let blocks: Vec<Block> = ranked
                .into_iter()
                .filter(|block| block.section == section)
                .collect();
            let key = round_key(request, fan, section);
            let shard = self
                .shards
                .shard_of(request.event.get(), section.get())
                .await
                .map_err(Error::from)?;
            let pool = self.shards.named(&shard).map_err(Error::from)?;
            place.enter(&self.gate, &shard).await?;
            let claimed = retry_transient(
                self.retry,
                |failure| self.metrics.retry(failure),
                || {
                    store::claim_best_with_code(
                        pool,
                        key,
                        request.event,
                        &blocks,
                        fan,
                        admission_jti,
                        code,
                    )
                },
            )
            .await?;
            match claimed {
                store::Claimed::Held(held) => return Ok(held.hold),
                store::Claimed::Repeated(key) => return Err(Answer::Repeated(key)),
                store::Claimed::Taken { .. } => {}
            }
        }
        Err(Answer::Refused(Error::Contention))
    }

    /// The seats of `sections` still set aside for the channel `code` opens, read on
    /// the database of each section, ascending.
    ///
    /// # Errors
    /// [`Error::PresaleCodeInvalid`] when the main database, the record of codes, knows
    /// no live channel of `code`; [`Error::Database`].
    async fn channel_free_seats(
        &self,
        event: EventId,
        code: &PresaleCode,
        sections: &[SectionId],
    ) -> Result<Vec<i64>, Error> {
        let mut by_database: BTreeMap<String, Vec<SectionId>> = BTreeMap::new();
        by_database.insert(MAIN.to_owned(), Vec::new());
        for &section in sections {
            let shard = self.shards.shard_of(event.get(), section.get()).await?;
            by_database.entry(shard).or_default().push(section);
        }
        let mut free = Vec::new();
        for (shard, sections) in &by_database {
            let pool = self.shards.named(shard)?;
            match store::channel_free_seats(pool, event, code, sections).await? {
                Some(seats) => free.extend(seats),
                None if shard == MAIN => return Err(Error::PresaleCodeInvalid),
                // A shard the copy has not brought the code to yet: none of its seats.
                None => {}
            }
        }
        free.sort_unstable();
        Ok(free)
    }
}
