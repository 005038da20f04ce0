//! Picking and claiming seats: a section skewed toward the best; in it, most fans press
//! "best available" (holds picks and claims the block, `ClaimBestAvailable`), the
//! others pick seats from the seat map's suggestions, half of them "or similar" (holds
//! takes the seats it would offer instead in the same call). After `SEAT_TAKEN` a fan
//! takes what it is offered: best available's seats apart, or at a price level the map
//! shows room for in a section the refusal named (holds choosing the section), or a
//! fresh pick. A best-available claim that finds no
//! block anywhere while seats are held waits in the returns queue, as a fan pressing
//! "best available" lets the site look for returned seats, until holds serves it a hold;
//! a fan who stops waiting leaves the line.

use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::StdRng;
use stadium_kit::Reason;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{
    ClaimBestAvailableRequest, ClaimSeatsRequest, Hold, HoldStatus, LeaveReturnsQueueRequest,
    ListHoldsRequest,
};
use stadium_proto::seat_map::v1::suggest_seats_request::Scope;
use stadium_proto::seat_map::v1::{Preference, SuggestSeatsRequest};
use tonic::Code;

use crate::budget::in_turn;
use crate::credentials::authed;
use crate::fan::{Ctx, TRANSIENT_RETRIES, backoff, retry_pause, think, transient};
use crate::mix::FanPlan;
use crate::returns_line::ReturnsLine;
use crate::skew::pick_section;
use crate::stats::{get, inc};

/// Suggestions asked for per pick; a fan takes the first most of the time.
const SUGGESTIONS: u32 = 5;
/// Share of fans who take the first (best) suggestion; the others take another.
const TAKE_BEST: f64 = 0.4;
/// Share of fans who pick seats "or similar" (`accept_similar`: holds claims the seats
/// it would offer instead, in the same call, while the picked ones are taken); the
/// others look at the map again after SEAT_TAKEN, maybe in another section.
const TAKE_SIMILAR: f64 = 0.5;
/// Share of fans who take seats apart when best available finds none together.
const TAKE_APART: f64 = 0.7;
/// Share of best-available fans who take any price level (their own first, then the
/// nearest others); the rest take their level or a cheaper one.
const TAKE_ANY_LEVEL: f64 = 0.5;
/// Share of the house free on the map below which fewer fans pick seats by hand (see
/// [`map_pick_share`]).
const PICKING_FADES_BELOW: f64 = 0.2;
/// Share of fans who take fewer seats when best available says only fewer fit.
const TAKE_FEWER: f64 = 0.5;
/// Unscaled pause after losing seats before trying again (a person reacting).
const REACTION_MS: std::ops::Range<u64> = 200..1_000;
/// How often a fan facing a fully held house looks for returned seats (at least).
const RETURNS_POLL: Duration = Duration::from_millis(250);
/// A fan in the returns queue looks at its holds every poll and asks its claim again
/// every this many polls (to learn its place, or a refusal that took it off the line).
const ASK_AGAIN_EVERY: u32 = 10;
/// Polls a fan waits in the returns queue before looking at the map again (seats may be
/// free that its claim cannot use: fewer, apart); the entry keeps its place for the
/// fan's next claim.
const LINE_PATIENCE: u32 = 3 * ASK_AGAIN_EVERY;

/// A hold the fan got, with its expiry on this process's clock.
#[derive(Debug, Clone)]
pub(crate) struct HeldSeats {
    /// The hold as the holds service answered.
    pub hold: Hold,
    /// When it lapses (claim answer time + `expires_in_ms`, by the server's clock).
    pub expires_at: Instant,
}

impl From<Hold> for HeldSeats {
    /// A hold answered now: it lapses `expires_in_ms` from now.
    fn from(hold: Hold) -> Self {
        let expires_at = Instant::now() + Duration::from_millis(hold.expires_in_ms);
        Self { hold, expires_at }
    }
}

impl HeldSeats {
    /// Seats in the hold.
    pub fn seats(&self) -> u64 {
        self.hold.seat_ids.len() as u64
    }
}

/// Parses comma-separated decimal seat ids (`alternative_seat_ids` metadata); `None`
/// when any part is not a number.
pub(crate) fn parse_seat_ids(list: &str) -> Option<Vec<u64>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}

/// What to claim next.
#[derive(Debug, Clone)]
enum Want {
    /// These seats of this section, or (true) similar ones if they are gone.
    Seats(u64, Vec<u64>, bool),
    /// The best block holds finds for this target (a section, or a price category in
    /// any section, then the further categories listed, in order), adjacent or not.
    Best(Target, Together, Vec<String>),
}

/// Whether a best-available claim asks for adjacent seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Together {
    /// Adjacent in one row.
    Yes,
    /// Any seats of the target.
    No,
}

/// What [`pick`] found.
enum Pick {
    /// Claim this.
    Claim(Want),
    /// Nothing this time (no suggestion, an error): pick again.
    Retry,
    /// Every seat is held or sold, but some holds may lapse: look again later.
    Wait,
    /// No seat is free and no fan knows of a hold, but fans wait in the returns queue:
    /// holds it made for them are the only ones left. A fan in the line leaves it
    /// (taking such a hold); the others look again later.
    Settle,
    /// Every seat is sold: the fan goes home.
    SoldOut,
}

/// The chance that a fan picks seats on the map rather than press "best available":
/// `1 - best_available_share` while the map shows at least [`PICKING_FADES_BELOW`] of
/// the house free, then falling in proportion to what is left, as people stop hunting
/// for single grey-free seats on a nearly full map (and would mostly lose them to fans
/// who saw the same map).
fn map_pick_share(ctx: &Ctx, available: &[u32]) -> f64 {
    let free: u64 = available.iter().map(|a| u64::from(*a)).sum();
    let free_share = free as f64 / ctx.map.seat_count().max(1) as f64;
    let share = 1.0 - ctx.options.best_available_share;
    (share * (free_share / PICKING_FADES_BELOW).min(1.0)).clamp(0.0, 1.0)
}

/// Picks the next seats to try: a section, then a suggestion in it (quantity is
/// lowered to what the fullest section has when no section has that many).
async fn pick(ctx: &Ctx, session: &str, quantity: &mut u32, rng: &mut StdRng) -> Pick {
    let available = ctx.map.available(ctx).await;
    if available.iter().all(|a| *a == 0) {
        // Sold out only once nothing is held any more: abandoned and late holds
        // lapse and their seats come back to whoever is still looking (holds the
        // returns queue made may not be seen yet: none while a fan is in the line);
        // and only on a map that is newer than the last seats that came back.
        if get(&ctx.stats.seats_held_now) == 0 && ctx.map.shows_none_free_after(ctx.last_hold_end())
        {
            if get(&ctx.stats.fans_in_returns_line) > 0 {
                return Pick::Settle;
            }
            ctx.mark_sold_out();
            return Pick::SoldOut;
        }
        return Pick::Wait;
    }
    let candidates = ctx.map.candidates(&available);
    let skew = ctx.options.section_skew;
    let section = match pick_section(rng, &candidates, *quantity, skew) {
        Some(s) => s,
        None => {
            // No section has that many together: take what the fullest one has.
            let fullest = candidates.iter().map(|c| c.available).max().unwrap_or(0);
            *quantity = fullest.min(*quantity).max(1);
            match pick_section(rng, &candidates, *quantity, skew) {
                Some(s) => s,
                None => return Pick::Retry,
            }
        }
    };
    if !rng.gen_bool(map_pick_share(ctx, &available)) {
        // As on a box office's page: a quantity and a price level (the best one the
        // map shows room for in the section the fan likes), holds choosing the section;
        // most fans take seats apart when no block is left, and say so at once.
        let (target, also) = match ctx.map.best_level(section, *quantity) {
            Some(level) => (
                Target::PriceCategory(level.to_owned()),
                ctx.map.other_levels(level, rng.gen_bool(TAKE_ANY_LEVEL)),
            ),
            None => (Target::SectionId(section), Vec::new()),
        };
        let together = if rng.gen_bool(TAKE_APART) {
            Together::No
        } else {
            Together::Yes
        };
        return Pick::Claim(Want::Best(target, together, also));
    }
    // Each fan aims at its own spot (front rows favoured), as people do on a map.
    let point = ctx.map.preferred_point(section, rng);
    let request = SuggestSeatsRequest {
        event_id: ctx.event.event_id.clone(),
        quantity: *quantity,
        scope: Some(Scope::SectionId(section)),
        preference: if point.is_some() {
            Preference::NearPoint
        } else {
            Preference::BestView
        } as i32,
        point,
        limit: SUGGESTIONS,
        ..SuggestSeatsRequest::default()
    };
    let mut client = ctx.clients.seat_map.clone();
    match ctx
        .call(
            "SeatMap/SuggestSeats",
            client.suggest_seats(authed(request, session)),
        )
        .await
    {
        Ok(response) if !response.suggestions.is_empty() => {
            // Most fans take the best block; some take another, as people do.
            let i = if rng.gen_bool(TAKE_BEST) {
                0
            } else {
                rng.gen_range(0..response.suggestions.len())
            };
            let s = &response.suggestions[i];
            let similar = rng.gen_bool(TAKE_SIMILAR);
            Pick::Claim(Want::Seats(s.section_id, s.seat_ids.clone(), similar))
        }
        Ok(_) => {
            ctx.map.mark_short(section, *quantity);
            Pick::Retry
        }
        Err(_) => Pick::Retry,
    }
}

/// Claims seats for the fan; `None` when it gave up (sold out, refused, admission
/// lapsed).
///
/// A fan tries in rounds of up to `max_claim_attempts` claims. A round lost to
/// `SEAT_TAKEN` (or to picks that found nothing) is not the end while the house still
/// has seats free or held (abandoned holds come back): the fan steps back for a think
/// time and starts another round, as people at a sale keep refreshing. It stops when the
/// event is sold out, when its admission token is refused (expired), or after
/// `max_queue_wait`.
pub(crate) async fn claim_seats(
    ctx: &Ctx,
    plan: &FanPlan,
    session: &str,
    admission: &str,
    rng: &mut StdRng,
) -> Option<HeldSeats> {
    let mut quantity = plan.seats.min(ctx.event.max_seats_per_claim).max(1);
    let give_up_at = Instant::now() + ctx.options.max_queue_wait;
    // Whether a claim of this fan waited in the returns queue (it may still be there).
    let mut line = ReturnsLine::new(&ctx.stats.fans_in_returns_line);
    loop {
        let round = claim_round(
            ctx,
            session,
            admission,
            (&mut quantity, &mut line),
            give_up_at,
            rng,
        )
        .await;
        match round {
            Round::Held(hold) => return Some(hold),
            Round::Lost if Instant::now() < give_up_at && !ctx.is_sold_out() => {
                inc(&ctx.stats.claim_rounds_lost);
                tokio::time::sleep(think(ctx, rng)).await;
            }
            Round::Lost | Round::Stop => {
                if matches!(round, Round::Lost) && !ctx.is_sold_out() {
                    inc(&ctx.stats.out_of_time);
                }
                // Leaving: out of the line, taking a hold it made meanwhile.
                return if line.queued() {
                    leave_line(ctx, session, admission, rng).await
                } else {
                    None
                };
            }
        }
    }
}

/// How one round of claims ended.
enum Round {
    /// A hold.
    Held(HeldSeats),
    /// Every try of the round lost: try another round if the sale goes on.
    Lost,
    /// Sold out, refused for good, or out of time: the fan leaves.
    Stop,
}

/// One turn of a fan at the screen: a pick that found nothing to claim (as
/// [`Pick`] says), or a claim and its answer.
enum Step {
    Retry,
    Wait,
    Settle,
    SoldOut,
    /// This was claimed, with this request id, and answered so.
    Answered(Want, String, Result<Answer, tonic::Status>),
}

/// Up to `max_claim_attempts` claims (and four times as many picks).
async fn claim_round(
    ctx: &Ctx,
    session: &str,
    admission: &str,
    (quantity, queued): (&mut u32, &mut ReturnsLine<'_>),
    give_up_at: Instant,
    rng: &mut StdRng,
) -> Round {
    let mut next: Option<Want> = None;
    // A claim that failed in transit is sent again with its request id, so a hold it
    // made before its answer was lost comes back instead of being held for nobody.
    let mut resend: Option<(Want, String)> = None;
    let mut tries = 0;
    // Empty suggestions or failed picks count too, so a round always ends.
    let mut picks = 0;
    while tries < ctx.options.max_claim_attempts && picks < 4 * ctx.options.max_claim_attempts {
        if ctx.is_sold_out() {
            return Round::Stop;
        }
        // The look at the map and the click are one turn: the claim goes out on what
        // the fan has just seen.
        let turn = ctx.turn().await;
        let step = in_turn(async {
            let (want, request_id) = match (resend.take(), next.take()) {
                (Some(again), _) => again,
                (None, Some(want)) => (want, new_request_id(rng)),
                (None, None) => match pick(ctx, session, quantity, rng).await {
                    Pick::Claim(want) => (want, new_request_id(rng)),
                    Pick::Retry => return Step::Retry,
                    Pick::Wait => return Step::Wait,
                    Pick::Settle => return Step::Settle,
                    Pick::SoldOut => return Step::SoldOut,
                },
            };
            let answer = claim(ctx, session, admission, &want, *quantity, &request_id).await;
            Step::Answered(want, request_id, answer)
        })
        .await;
        drop(turn);
        let (want, request_id, answer) = match step {
            Step::Answered(want, request_id, answer) => (want, request_id, answer),
            Step::Retry => {
                picks += 1;
                continue;
            }
            Step::Settle if queued.queued() => {
                let hold = leave_line(ctx, session, admission, rng).await;
                queued.leave();
                if let Some(hold) = hold {
                    return Round::Held(hold);
                }
                continue;
            }
            Step::Wait | Step::Settle if Instant::now() < give_up_at => {
                tokio::time::sleep(ctx.options.map_refresh.max(RETURNS_POLL)).await;
                // A claim the fan left in the returns queue may have been served.
                if queued.queued()
                    && let Some(hold) = live_hold(ctx, session).await
                {
                    inc(&ctx.stats.served_from_queue);
                    return Round::Held(hold);
                }
                continue;
            }
            Step::Wait | Step::Settle => {
                inc(&ctx.stats.out_of_time);
                return Round::Stop;
            }
            Step::SoldOut => return Round::Stop,
        };
        // A claim the service shed (OVERLOADED: nothing done, come back after the hint)
        // was not an attempt at the seats; it still counts toward the round's end.
        if matches!(&answer, Err(status) if Reason::of(status) == Some(Reason::Overloaded)) {
            picks += 1;
        } else {
            tries += 1;
            inc(&ctx.stats.claim_attempts);
        }
        let status = match answer {
            Ok(Answer::Held(hold)) => return Round::Held(HeldSeats::from(hold)),
            Ok(Answer::Waiting) => {
                queued.enter();
                let line = Line {
                    session,
                    admission,
                    want: &want,
                    quantity: *quantity,
                    request_id: &request_id,
                };
                return wait_in_line(ctx, &line, give_up_at, rng).await;
            }
            Ok(Answer::Empty) => return Round::Stop,
            Err(status) => status,
        };
        let info = stadium_kit::status::error_info(&status);
        match Reason::of(&status) {
            Some(Reason::SeatTaken) => {
                inc(&ctx.stats.seat_taken);
                let mut waited_for_returns = false;
                let listed = |key: &str| {
                    info.as_ref()
                        .and_then(|i| i.metadata.get(key))
                        .and_then(|list| parse_seat_ids(list))
                        .unwrap_or_default()
                };
                next = match &want {
                    // Holds already tried similar seats for those who wanted them;
                    // everyone looks at the map again.
                    Want::Seats(..) => None,
                    // Best available already tried every block there: the same seats
                    // apart when it says they exist (most people take them), else
                    // another section it named, else look at the map again.
                    Want::Best(target, together, also) => {
                        let said = |key: &str| {
                            info.as_ref()
                                .and_then(|i| i.metadata.get(key))
                                .cloned()
                                .unwrap_or_default()
                        };
                        let apart = *together == Together::Yes && said("not_together") == "true";
                        let fewer = said("fewer_seats").parse::<u32>().unwrap_or(0);
                        let others = listed("other_section_ids");
                        if apart && rng.gen_bool(TAKE_APART) {
                            Some(Want::Best(target.clone(), Together::No, also.clone()))
                        } else if !others.is_empty() {
                            let other = others[rng.gen_range(0..others.len())];
                            let target = elsewhere(ctx, target, other, *quantity);
                            let also = match &target {
                                Target::PriceCategory(code) => ctx.map.other_levels(code, false),
                                Target::SectionId(_) => Vec::new(),
                            };
                            Some(Want::Best(target, Together::Yes, also))
                        } else if fewer > 0 && fewer < *quantity && rng.gen_bool(TAKE_FEWER) {
                            *quantity = fewer;
                            Some(Want::Best(target.clone(), *together, also.clone()))
                        } else {
                            // Nothing the fan wants fits anywhere holds knows of: wait for
                            // the map to change (returns, lapses) instead of asking again.
                            waited_for_returns = true;
                            None
                        }
                    }
                };
                if next.is_none() {
                    let pause = if waited_for_returns {
                        ctx.options.map_refresh.max(RETURNS_POLL)
                    } else {
                        ctx.options
                            .scaled(Duration::from_millis(rng.gen_range(REACTION_MS)))
                    };
                    tokio::time::sleep(pause).await;
                }
            }
            Some(Reason::LimitExceeded) => {
                let max = info
                    .as_ref()
                    .and_then(|i| i.metadata.get("max"))
                    .and_then(|m| m.parse::<u32>().ok())
                    .unwrap_or(0);
                let limit = info
                    .as_ref()
                    .and_then(|i| i.metadata.get("limit"))
                    .map(String::as_str);
                if limit == Some("seats_per_claim") && max > 0 && max < *quantity {
                    *quantity = max;
                } else if limit == Some("holds_per_admission")
                    && queued.queued()
                    && let Some(hold) = live_hold(ctx, session).await
                {
                    // The returns queue served an earlier claim of this admission.
                    inc(&ctx.stats.served_from_queue);
                    return Round::Held(hold);
                } else {
                    return Round::Stop;
                }
            }
            _ if status.code() == Code::Unauthenticated => {
                inc(&ctx.stats.admission_expired);
                return Round::Stop;
            }
            _ if transient(&status) => {
                tokio::time::sleep(retry_pause(&status, rng, tries)).await;
                resend = Some((want, request_id));
            }
            _ => return Round::Stop,
        }
    }
    Round::Lost
}

/// Where a fan looks for `quantity` seats after best available in `target` found no
/// block but room in the section `other`: the best price level the map shows room for in
/// `other` (holds choosing the section), as people pick another price level once theirs
/// is gone; `other` itself when that is the level just refused or the map shows none.
fn elsewhere(ctx: &Ctx, target: &Target, other: u64, quantity: u32) -> Target {
    let refused = match target {
        Target::PriceCategory(code) => Some(code.as_str()),
        Target::SectionId(_) => None,
    };
    match ctx.map.best_level(other, quantity) {
        Some(code) if Some(code) != refused => Target::PriceCategory(code.to_owned()),
        _ => Target::SectionId(other),
    }
}

/// A claim waiting in the returns queue.
struct Line<'a> {
    session: &'a str,
    admission: &'a str,
    want: &'a Want,
    quantity: u32,
    request_id: &'a str,
}

/// Waits in the returns queue until holds serves the claim: looks at the fan's live
/// holds every poll (one cheap read) and asks the claim again now and then (it keeps
/// its place). Ends the round after [`LINE_PATIENCE`] polls (the fan looks at the map
/// again), at the sell-out, or out of time.
async fn wait_in_line(ctx: &Ctx, line: &Line<'_>, give_up_at: Instant, rng: &mut StdRng) -> Round {
    inc(&ctx.stats.queued_for_returns);
    for poll in 1..=LINE_PATIENCE {
        let pause = ctx.options.map_refresh.max(RETURNS_POLL);
        tokio::time::sleep(pause.mul_f64(rng.gen_range(0.9..1.1))).await;
        if !poll.is_multiple_of(ASK_AGAIN_EVERY) {
            if let Some(hold) = live_hold(ctx, line.session).await {
                inc(&ctx.stats.served_from_queue);
                return Round::Held(hold);
            }
        } else {
            let asked = claim(
                ctx,
                line.session,
                line.admission,
                line.want,
                line.quantity,
                line.request_id,
            )
            .await;
            match asked {
                Ok(Answer::Held(hold)) => {
                    inc(&ctx.stats.served_from_queue);
                    return Round::Held(HeldSeats::from(hold));
                }
                Ok(Answer::Waiting) => {}
                Ok(Answer::Empty) => return Round::Stop,
                Err(status) if transient(&status) => {}
                Err(status) if Reason::of(&status) == Some(Reason::SeatTaken) => {
                    // Room elsewhere now, or nothing held any more: look at the map.
                    // Counted as a refusal, though the claim was counted once already
                    // (as queued): the rate errs on the side of more SEAT_TAKEN.
                    inc(&ctx.stats.seat_taken);
                    return Round::Lost;
                }
                Err(_) => return Round::Stop,
            }
        }
        if ctx.is_sold_out() {
            return Round::Stop;
        }
        if Instant::now() >= give_up_at {
            inc(&ctx.stats.out_of_time);
            return Round::Stop;
        }
    }
    Round::Lost
}

/// The fan's live hold of the event, if holds has made one (`ListHolds`).
async fn live_hold(ctx: &Ctx, session: &str) -> Option<HeldSeats> {
    let request = ListHoldsRequest {
        event_id: ctx.event.event_id.clone(),
    };
    let mut client = ctx.clients.holds.clone();
    ctx.call(
        "Holds/ListHolds",
        client.list_holds(authed(request, session)),
    )
    .await
    .ok()?
    .holds
    .into_iter()
    .find(|h| h.status == HoldStatus::Held as i32 && h.expires_in_ms > 0)
    .map(HeldSeats::from)
}

/// Leaves the returns queue (the fan stops looking); the hold the queue made before
/// that, if any (the fan takes it).
async fn leave_line(
    ctx: &Ctx,
    session: &str,
    admission: &str,
    rng: &mut StdRng,
) -> Option<HeldSeats> {
    for attempt in 0..=TRANSIENT_RETRIES {
        let request = LeaveReturnsQueueRequest {
            admission_token: admission.to_owned(),
            event_id: ctx.event.event_id.clone(),
        };
        let mut client = ctx.clients.holds.clone();
        match ctx
            .call(
                "Holds/LeaveReturnsQueue",
                client.leave_returns_queue(authed(request, session)),
            )
            .await
        {
            Err(e) if transient(&e) => tokio::time::sleep(backoff(rng, attempt)).await,
            _ => break,
        }
    }
    let hold = live_hold(ctx, session).await;
    if hold.is_some() {
        inc(&ctx.stats.served_from_queue);
    }
    hold
}

/// A new claim's request id: 32 hex digits from the fan's seeded generator.
fn new_request_id(rng: &mut StdRng) -> String {
    format!("{:032x}", rng.r#gen::<u128>())
}

/// What a claim was answered.
enum Answer {
    /// Seats held.
    Held(Hold),
    /// The claim waits in the returns queue.
    Waiting,
    /// Neither (a malformed answer): the fan gives up.
    Empty,
}

/// One claim of `want` with `request_id` (best available waits for returns).
async fn claim(
    ctx: &Ctx,
    session: &str,
    admission: &str,
    want: &Want,
    quantity: u32,
    request_id: &str,
) -> Result<Answer, tonic::Status> {
    let mut client = ctx.clients.holds.clone();
    match want {
        Want::Seats(section_id, seat_ids, similar) => {
            let request = ClaimSeatsRequest {
                admission_token: admission.to_owned(),
                event_id: ctx.event.event_id.clone(),
                section_id: *section_id,
                seat_ids: seat_ids.clone(),
                request_id: request_id.to_owned(),
                presale_code: String::new(),
                accept_similar: *similar,
            };
            ctx.call(
                "Holds/ClaimSeats",
                client.claim_seats(authed(request, session)),
            )
            .await
            .map(|r| r.hold.map_or(Answer::Empty, Answer::Held))
        }
        Want::Best(target, together, also) => {
            let request = ClaimBestAvailableRequest {
                admission_token: admission.to_owned(),
                event_id: ctx.event.event_id.clone(),
                target: Some(target.clone()),
                quantity,
                together: *together == Together::Yes,
                request_id: request_id.to_owned(),
                wait_for_returns: true,
                also_price_categories: also.clone(),
                presale_code: String::new(),
            };
            ctx.call(
                "Holds/ClaimBestAvailable",
                client.claim_best_available(authed(request, session)),
            )
            .await
            .map(|r| match (r.hold, r.waiting) {
                (Some(hold), _) => Answer::Held(hold),
                (None, Some(_)) => Answer::Waiting,
                (None, None) => Answer::Empty,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_id_lists_parse() {
        assert_eq!(parse_seat_ids("3, 4,5"), Some(vec![3, 4, 5]));
        assert_eq!(parse_seat_ids(""), Some(vec![]));
        assert_eq!(parse_seat_ids("3,x"), None);
    }
}
