//! Best available in the service: the event's layout kept per process, availability
//! hints learned from every answer, and the rounds of one request. Each round ranks the
//! blocks that fit on the latest hint and sends the best ones to `holds.claim_best`,
//! which tries them in order in one round trip; a round that loses every block brings
//! the section's fresh availability back, and the next round ranks on that. Only a
//! request for which the fresh availability has no fitting block is answered
//! `SEAT_TAKEN`, with what is still possible. A price category is tried one of its
//! sections per round, only those whose seats of the category had room for the request
//! within the last second (one read of the event's unavailable seats per second, shared
//! by every request), concurrent requests starting on different sections: a category of
//! fifty sections costs a request what a section does.
//!
//! The hints and the in-flight count only order the attempts (concurrent requests start
//! on different blocks instead of all on the best one); every decision is the
//! database's.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;

use stadium_db::retry_transient;
use stadium_seating::Availability;

use super::fan_limits::Claimer;
use super::gate::ClaimGate;
use super::{HoldsService, fan_limits, unshared};
use crate::domain::best::{BestRequest, Block, EventLayout, Hints, Target};
use crate::domain::room::Room;
use crate::domain::{EventId, FanId, Hold, HoldKey, PresaleCode, SectionId};
use crate::error::Error;
use crate::store;

/// Blocks sent to the database per round.
pub(super) const BLOCKS_PER_CALL: usize = 24;
/// Sections of a price category ranked per round (those with room, concurrent requests
/// starting on different ones): each round's refusal re-reads only their seats, and
/// requests in flight together claim in different sections instead of waiting on each
/// other's seats.
const SECTIONS_PER_ROUND: usize = 1;
/// Rounds before a request gives up with `ABORTED/CONTENTION` while blocks still fit.
pub(super) const MAX_ROUNDS: usize = 8;
/// How long an event's layout is kept (it is fixed once the event is on sale; the bound
/// lets memory go and a corrected plan show).
const LAYOUT_TTL: Duration = Duration::from_secs(300);
/// How long an availability hint or a section's room is trusted before it is dropped.
const HINT_TTL: Duration = Duration::from_secs(1);

/// What best available keeps between requests.
#[derive(Debug)]
pub(super) struct BestState {
    layouts: moka::future::Cache<EventId, Arc<EventLayout>>,
    hints: moka::sync::Cache<(EventId, SectionId), Arc<Availability>>,
    rooms: moka::future::Cache<EventId, Arc<Vec<Room>>>,
    in_flight: AtomicUsize,
    turns: AtomicUsize,
}

impl BestState {
    /// Nothing learnt yet.
    pub(super) fn new() -> Self {
        Self {
            layouts: moka::future::Cache::builder()
                .max_capacity(64)
                .time_to_live(LAYOUT_TTL)
                .build(),
            hints: moka::sync::Cache::builder()
                .max_capacity(20_000)
                .time_to_live(HINT_TTL)
                .build(),
            rooms: moka::future::Cache::builder()
                .max_capacity(64)
                .time_to_live(HINT_TTL)
                .build(),
            in_flight: AtomicUsize::new(0),
            turns: AtomicUsize::new(0),
        }
    }
}

/// How the rounds of a request ended without a new hold.
pub(super) enum Answer {
    /// Refused, as the error says.
    Refused(Error),
    /// The request id's hold key already names a hold (a retry).
    Repeated(HoldKey),
}

impl From<Error> for Answer {
    fn from(error: Error) -> Self {
        Self::Refused(error)
    }
}

/// The rounds of one request, over every category it takes: it may go on while fewer
/// than [`MAX_ROUNDS`] rounds were lost to concurrent claims (a round that found its
/// section full is no lost race: it does not count).
#[derive(Debug, Default)]
struct Rounds {
    /// Claim rounds sent to the database.
    rounds: usize,
    /// Sections found without a fitting block.
    exhausted: usize,
}

impl Rounds {
    fn left(&self) -> bool {
        self.rounds < MAX_ROUNDS + self.exhausted
    }
}

/// Counts a request in flight while it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl HoldsService {
    /// Claims the best block that fits `request` for `fan` (admitted with
    /// `admission_jti`), all or nothing, as described in the module documentation; with
    /// `code` (a presale code or a channel's key), among the seats of its channel only
    /// (see `channel_best.rs`).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::InvalidField`] for a quantity above the
    /// event's per-claim limit, an unknown section or price category (nothing written);
    /// as `store::claim` ([`Error::EventNotOnSale`], [`Error::LimitExceeded`], …);
    /// [`Error::NoBlockLeft`] when the fresh availability has no fitting block (for a
    /// price category: in none of its sections that had room within the last second;
    /// with further categories: for none of them);
    /// [`Error::Contention`] after [`MAX_ROUNDS`] lost rounds; with a code, also
    /// [`Error::PresaleCodeInvalid`] and the code's [`Error::LimitExceeded`].
    #[tracing::instrument(skip_all, fields(event_id = %request.event, quantity = request.quantity))]
    pub async fn claim_best(
        &self,
        request: &BestRequest,
        fan: &FanId,
        admission_jti: &str,
        code: Option<&PresaleCode>,
    ) -> Result<Hold, Error> {
        let started = Instant::now();
        let result = if self.shards.others().next().is_none() {
            self.best_settled(request, fan, admission_jti, code).await
        } else {
            // Detached: once a round may commit, the caller going away cannot stop its
            // checks across shards.
            let (this, request, fan, jti, code) = (
                self.clone(),
                request.clone(),
                fan.clone(),
                admission_jti.to_owned(),
                code.cloned(),
            );
            fan_limits::detached(async move {
                this.best_settled(&request, &fan, &jti, code.as_ref()).await
            })
            .await
        };
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let outcome = match &result {
            Ok(hold) => {
                tracing::debug!(hold_key = %hold.key, "claimed best available");
                "held"
            }
            Err(Error::NoBlockLeft { .. }) => "seat_taken",
            Err(Error::Database(_) | Error::Contention) => "error",
            Err(Error::Overloaded { .. }) => "shed",
            Err(_) => "refused",
        };
        let section = match (&result, &request.target) {
            (Ok(hold), _) => Some(hold.section),
            (Err(_), Target::Section(section)) => Some(*section),
            (Err(_), Target::Category(_)) => None,
        };
        let place = self.place(request.event, section).await;
        self.metrics.claim(outcome, elapsed_ms, &place);
        result
    }

    /// A best-available request's rounds, and the answer settled: a new hold checked
    /// across shards (`request_family`, `fan_limits`), a retry answered by the hold its
    /// request id made, a `holds_per_admission` refusal answered by the admission's hold
    /// when it is what was asked (`repeated`).
    ///
    /// # Errors
    /// As [`Self::claim_best`].
    async fn best_settled(
        &self,
        request: &BestRequest,
        fan: &FanId,
        admission_jti: &str,
        code: Option<&PresaleCode>,
    ) -> Result<Hold, Error> {
        let quantity = usize::try_from(request.quantity).unwrap_or(usize::MAX);
        let asked = |hold: &Hold| {
            hold.seats.len() == quantity
                && match &request.target {
                    Target::Section(section) => hold.section == *section,
                    Target::Category(_) => true,
                }
        };
        let claimer = Claimer {
            fan,
            admission_jti,
            code: code.map(PresaleCode::sha256),
        };
        if let Some(made) = self
            .made_for_request(request.event, fan, request.request.as_ref())
            .await?
        {
            return self.answer_repeated(made, claimer, asked).await;
        }
        let rounds = match &code {
            None => self.each_category(request, fan, admission_jti).await,
            Some(code) => self.channel_rounds(request, fan, admission_jti, code).await,
        };
        match rounds {
            Ok(hold) => {
                let with_request = request.request.is_some();
                let hold = self.only_hold_of_request(hold, with_request).await?;
                self.within_fan_limits(hold, claimer).await
            }
            Err(Answer::Repeated(key)) => self.answer_repeated(key, claimer, asked).await,
            Err(Answer::Refused(refused @ Error::LimitExceeded { .. })) => {
                self.answered_before(refused, request.event, fan.as_str(), admission_jti, asked)
                    .await
            }
            Err(Answer::Refused(refused)) => Err(refused),
        }
    }

    /// The rounds of each category the request accepts, in order (a section or a lone
    /// category: its own rounds): the first hold ends it; a category without a fitting
    /// block passes to the next; when none fits, the refusal says what is possible over
    /// all of them (`other_sections`: sections where none of them was asked). The
    /// [`MAX_ROUNDS`] lost rounds are shared by all the categories, so a long list costs
    /// a request no more claim attempts than one category.
    async fn each_category(
        &self,
        request: &BestRequest,
        fan: &FanId,
        admission_jti: &str,
    ) -> Result<Hold, Answer> {
        let tries = request.each_category();
        if tries.len() > 1 {
            // Every code is checked before any claim, so a bad list writes nothing.
            let layout = self.event_layout(request.event).await?;
            for code in &request.also_categories {
                layout
                    .sections_for(&Target::Category(code.clone()))
                    .map_err(|_| {
                        Error::invalid(
                            "also_price_categories",
                            format!("no seat of the event's venue has price category {code:?}"),
                        )
                    })?;
            }
        }
        let mut refusal: Option<(u32, bool, Vec<SectionId>)> = None;
        let mut budget = Rounds::default();
        for each in &tries {
            match self
                .best_rounds(each, fan, admission_jti, &mut budget)
                .await
            {
                Err(Answer::Refused(Error::NoBlockLeft {
                    fewer_seats,
                    not_together,
                    other_sections,
                })) => {
                    refusal = Some(match refusal {
                        None => (fewer_seats, not_together, other_sections),
                        Some((fewer, apart, mut others)) => {
                            others.retain(|s| other_sections.contains(s));
                            (fewer.max(fewer_seats), apart || not_together, others)
                        }
                    });
                }
                other => return other,
            }
        }
        let (fewer_seats, not_together, other_sections) = refusal.unwrap_or_default();
        Err(Answer::Refused(Error::NoBlockLeft {
            fewer_seats,
            not_together,
            other_sections,
        }))
    }

    /// The rounds of one target, within what is left of the request's `budget`.
    async fn best_rounds(
        &self,
        request: &BestRequest,
        fan: &FanId,
        admission_jti: &str,
        budget: &mut Rounds,
    ) -> Result<Hold, Answer> {
        let layout = self.event_layout(request.event).await?;
        let sections = within_limits(&layout, request)?;
        let best = &self.best;
        let crowd = best.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        let _counted = InFlight(&best.in_flight);
        let turn = best.turns.fetch_add(1, Ordering::Relaxed);
        // A section target is tried as it is; a price category only in its sections whose
        // seats of that category had room for the request a moment ago, one per round.
        let mut candidates = match request.target {
            Target::Section(_) => sections.clone(),
            Target::Category(_) => {
                let mut room = self.target_rooms(&layout, request).await?;
                // Concurrent requests start on different sections of the category.
                let lead = crowd.min(room.len());
                if lead > 1 {
                    room[..lead].rotate_left(turn % lead);
                }
                room
            }
        };
        let started_with = candidates.len();
        // Sections whose availability this request read from the database.
        let mut fresh: HashSet<SectionId> = HashSet::new();
        // Sections tried and found without a fitting block, for what is still possible.
        let mut exhausted: Vec<SectionId> = Vec::new();
        let mut place = GatePlace::default();
        while budget.left() {
            let round: Vec<SectionId> = candidates
                .iter()
                .copied()
                .take(SECTIONS_PER_ROUND)
                .collect();
            let hints = self.hints(request.event, &round);
            let mut blocks = layout.blocks(request, &round, &hints, BLOCKS_PER_CALL);
            // What a section has is known from this request's own read; for a category,
            // also from a hint (at most a second old, as the room that chose it).
            let known = |s: &SectionId| {
                fresh.contains(s)
                    || (matches!(request.target, Target::Category(_)) && hints.contains_key(s))
            };
            if blocks.is_empty() && round.iter().all(known) {
                // Nothing fits in these sections: the next ones.
                candidates.retain(|s| !round.contains(s));
                budget.exhausted += round.len();
                exhausted.extend(round);
                if !candidates.is_empty() {
                    continue;
                }
                // Why, for whoever reads the logs: no section had room a moment ago
                // (`started_with` 0), or the sections that had were found full by this
                // request's own reads (`read`) or by hints at most a second old.
                tracing::debug!(
                    started_with,
                    exhausted = exhausted.len(),
                    read = fresh.len(),
                    rounds = budget.rounds,
                    "no fitting block left"
                );
                // What is still possible is read off the claims gate.
                drop(place);
                let hints = self.hints(request.event, &exhausted);
                let possible = layout.possible(request, &exhausted, &hints);
                let other_sections = self
                    .sections_with_room(request.event, &layout, &sections, request)
                    .await?;
                return Err(Answer::Refused(Error::NoBlockLeft {
                    fewer_seats: possible.fewer_seats,
                    not_together: possible.not_together,
                    other_sections,
                }));
            }
            let Some(&section) = round.first() else {
                break;
            };
            let key = round_key(request, fan, section);
            budget.rounds += 1;
            spread(&mut blocks, turn, crowd);
            let shard = self
                .shards
                .shard_of(request.event.get(), section.get())
                .await
                .map_err(Error::from)?;
            let pool = self.shards.named(&shard).map_err(Error::from)?;
            place.enter(&self.gate, &shard).await?;
            let outcome = retry_transient(
                self.retry,
                |failure| self.metrics.retry(failure),
                || {
                    store::claim_best(
                        pool,
                        key,
                        request.event,
                        &round,
                        &blocks,
                        fan,
                        admission_jti,
                    )
                },
            )
            .await?;
            match outcome.claimed {
                store::Claimed::Held(held) => {
                    if held.expired_on_the_way > 0 {
                        let place = self.place(request.event, Some(held.hold.section)).await;
                        self.metrics
                            .expired_by_claim(held.expired_on_the_way, &place);
                    }
                    self.mark_taken(request.event, &held.hold);
                    return Ok(held.hold);
                }
                store::Claimed::Repeated(key) => return Err(Answer::Repeated(key)),
                store::Claimed::Taken { unavailable } => {
                    for &section in &round {
                        if let Some(availability) = layout.availability(section, &unavailable) {
                            best.hints
                                .insert((request.event, section), Arc::new(availability));
                        }
                        fresh.insert(section);
                    }
                }
            }
        }
        Err(Answer::Refused(Error::Contention))
    }

    /// The event's layout, read once and kept: concurrent requests that miss the
    /// cache wait for one read (a 50,000-seat layout is megabytes; a read per request
    /// in a burst would hold the pool for seconds).
    pub(super) async fn event_layout(&self, event: EventId) -> Result<Arc<EventLayout>, Error> {
        self.best
            .layouts
            .try_get_with(event, async {
                let mut conn = self.shards.main().acquire().await?;
                let layout = store::event_layout(&mut conn, event)
                    .await?
                    .ok_or(Error::EventNotFound)?;
                Ok::<_, Error>(Arc::new(layout))
            })
            .await
            .map_err(unshared)
    }

    fn hints(&self, event: EventId, sections: &[SectionId]) -> Hints {
        sections
            .iter()
            .filter_map(|&section| {
                let hint = self.best.hints.get(&(event, section))?;
                Some((section, Availability::clone(&hint)))
            })
            .collect()
    }

    /// Marks a new hold's seats taken in the hint of its section.
    fn mark_taken(&self, event: EventId, hold: &Hold) {
        let key = (event, hold.section);
        if let Some(hint) = self.best.hints.get(&key) {
            let mut next = Availability::clone(&hint);
            for seat in &hold.seats {
                let _ = next.set(seat.wire(), false);
            }
            self.best.hints.insert(key, Arc::new(next));
        }
    }

    /// Whether a section of `request`'s target, or of a further category it takes, had
    /// room for it (see [`Room::fits`]; for a price category, in its seats), as counted at most [`HINT_TTL`] ago: a cheap
    /// filter before a claim, which still decides.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::InvalidField`] for a target the event does
    /// not have; [`Error::Database`].
    pub(super) async fn target_has_room(&self, request: &BestRequest) -> Result<bool, Error> {
        let layout = self.event_layout(request.event).await?;
        for each in request.each_category() {
            layout.sections_for(&each.target)?;
            if !self.target_rooms(&layout, &each).await?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The sections of `request`'s target where it fitted at most [`HINT_TTL`] ago (in
    /// the target's price category for a category), ascending.
    async fn target_rooms(
        &self,
        layout: &EventLayout,
        request: &BestRequest,
    ) -> Result<Vec<SectionId>, Error> {
        let rooms = self.rooms(request.event, layout).await?;
        Ok(rooms
            .iter()
            .filter(|room| match (&request.target, &room.category) {
                (Target::Section(section), None) => room.section == *section,
                (Target::Category(code), Some(category)) => code == category,
                _ => false,
            })
            .filter(|room| room.fits(request.quantity, request.together))
            .map(|room| room.section)
            .collect())
    }

    /// Sections of the event other than `asked` where `request`'s quantity fits in any
    /// seats (side by side when it asks `together`), as seen at most [`HINT_TTL`] ago.
    async fn sections_with_room(
        &self,
        event: EventId,
        layout: &EventLayout,
        asked: &[SectionId],
        request: &BestRequest,
    ) -> Result<Vec<SectionId>, Error> {
        let rooms = self.rooms(event, layout).await?;
        Ok(rooms
            .iter()
            .filter(|room| {
                room.category.is_none()
                    && room.fits(request.quantity, request.together)
                    && !asked.contains(&room.section)
            })
            .map(|room| room.section)
            .collect())
    }

    /// What every section of the event, and each price category in it, had room for at
    /// most [`HINT_TTL`] ago: one read of the event's unavailable seats per interval,
    /// whatever the number of requests.
    async fn rooms(&self, event: EventId, layout: &EventLayout) -> Result<Arc<Vec<Room>>, Error> {
        self.best
            .rooms
            .try_get_with(event, async {
                let mut unavailable = Vec::new();
                for (_, pool) in self.shards.all() {
                    let mut conn = pool.acquire().await?;
                    unavailable.extend(store::unavailable_seat_ids(&mut conn, event).await?);
                }
                unavailable.sort_unstable();
                Ok::<_, Error>(Arc::new(layout.rooms(&unavailable)))
            })
            .await
            .map_err(unshared)
    }
}

/// A best-available request's place at the claims gate: one place at a database's door
/// for every round there, and the time waited at doors over all rounds, which stays
/// within one wait (see `Door::enter_after`).
#[derive(Default)]
pub(super) struct GatePlace {
    /// The database of the latest round and the place held at its door.
    held: Option<(String, OwnedSemaphorePermit)>,
    waited: Duration,
}

impl GatePlace {
    /// Holds a place at `shard`'s door of `gate`, keeping the one held when the
    /// previous round was on the same database.
    ///
    /// # Errors
    /// As `Door::enter_after`; [`Error::CorruptRow`] for a shard without a door.
    pub(super) async fn enter(&mut self, gate: &ClaimGate, shard: &str) -> Result<(), Error> {
        if self.held.as_ref().is_none_or(|(at, _)| at != shard) {
            self.held = None;
            let permit = gate.door(shard)?.enter_after(&mut self.waited).await?;
            self.held = Some((shard.to_owned(), permit));
        }
        Ok(())
    }
}

/// The sections of `request`'s target, once its quantity is within the event's
/// per-claim limit.
///
/// # Errors
/// [`Error::InvalidField`] for a quantity above the limit or a target the event does
/// not have.
pub(super) fn within_limits(
    layout: &EventLayout,
    request: &BestRequest,
) -> Result<Vec<SectionId>, Error> {
    let max = layout.max_seats_per_claim();
    if request.quantity > max {
        return Err(Error::invalid(
            "quantity",
            format!("must be at most {max}, the event's seats per claim"),
        ));
    }
    layout.sections_for(&request.target)
}

/// The hold key of a round in `section`: each round claims in one section, under a key
/// that carries it; with a request id, every round's key is of the request's one family.
pub(super) fn round_key(request: &BestRequest, fan: &FanId, section: SectionId) -> HoldKey {
    request.request.as_ref().map_or_else(
        || HoldKey::generate(request.event, section),
        |id| HoldKey::for_request(request.event, fan, id, section),
    )
}

/// Starts this request on a different one of the leading disjoint blocks than the
/// requests running beside it: the first `min(crowd, disjoint)` blocks are rotated by
/// `turn`, so `crowd` concurrent requests begin on distinct blocks instead of all
/// waiting on the best one. The rest keeps its rank order.
fn spread(blocks: &mut [Block], turn: usize, crowd: usize) {
    let mut seen = std::collections::HashSet::new();
    let disjoint = blocks
        .iter()
        .take_while(|b| b.seats.iter().all(|s| seen.insert(*s)))
        .count();
    let lead = crowd.min(disjoint);
    if lead > 1 {
        blocks[..lead].rotate_left(turn % lead);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::SeatId;

    fn block(seats: &[u64]) -> Block {
        Block {
            section: SectionId::try_from(1u64).unwrap(),
            seats: seats
                .iter()
                .map(|&s| SeatId::try_from(s).unwrap())
                .collect(),
        }
    }

    #[test]
    fn spreading_rotates_only_the_disjoint_lead() {
        let mut blocks = vec![
            block(&[1, 2]),
            block(&[3, 4]),
            block(&[5, 6]),
            block(&[2, 3]),
        ];
        spread(&mut blocks, 1, 2);
        assert_eq!(blocks[0], block(&[3, 4]));
        assert_eq!(blocks[1], block(&[1, 2]));
        let mut alone = blocks.clone();
        spread(&mut alone, 7, 1);
        assert_eq!(alone, blocks);
        let mut crowded = vec![block(&[1, 2]), block(&[2, 3]), block(&[5, 6])];
        spread(&mut crowded, 1, 10);
        assert_eq!(crowded[0], block(&[1, 2]));
    }
}
