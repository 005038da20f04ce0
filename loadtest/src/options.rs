//! Knobs of a run: the fans' behaviour ([`OnSaleOptions`], [`BehaviourShares`]) and the
//! event a run sets up ([`EventOptions`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{LoadtestError, Result};

/// What fans do once they hold seats, as relative weights (normalised, so they need
/// not sum to 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BehaviourShares {
    /// Confirm and pay with the payment token while the hold is alive.
    pub pay: f64,
    /// Walk away: the hold expires and the seats return.
    pub abandon: f64,
    /// Wait past the hold's expiry, then confirm: the money must come back (or never
    /// be taken) and the seats must not be booked.
    pub pay_late: f64,
    /// Send two confirms at once: both must answer the same order, one charge.
    pub double_confirm: f64,
}

impl Default for BehaviourShares {
    /// 80 % pay, 10 % abandon, 4 % pay late, 6 % double confirm.
    fn default() -> Self {
        BehaviourShares {
            pay: 0.80,
            abandon: 0.10,
            pay_late: 0.04,
            double_confirm: 0.06,
        }
    }
}

impl BehaviourShares {
    /// The weights as fractions summing to 1, in the order pay, abandon, pay late,
    /// double confirm.
    ///
    /// Errors: [`LoadtestError::InvalidOption`] for a negative or non-finite weight or
    /// an all-zero mix.
    pub fn normalised(&self) -> Result<[f64; 4]> {
        let raw = [self.pay, self.abandon, self.pay_late, self.double_confirm];
        let names = [
            "shares.pay",
            "shares.abandon",
            "shares.pay_late",
            "shares.double_confirm",
        ];
        for (value, field) in raw.iter().zip(names) {
            if !value.is_finite() || *value < 0.0 {
                return Err(LoadtestError::InvalidOption {
                    field,
                    reason: format!("{value} is not a finite share >= 0"),
                });
            }
        }
        let sum: f64 = raw.iter().sum();
        if sum <= 0.0 {
            return Err(LoadtestError::InvalidOption {
                field: "shares",
                reason: "every share is 0".into(),
            });
        }
        Ok(raw.map(|v| v / sum))
    }
}

/// How the simulated crowd behaves during [`crate::run_onsale`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnSaleOptions {
    /// Fans to simulate (each one tokio task); 0 = 75 % of the venue's seats (most
    /// fans want two or more, so demand exceeds the house), at least 1.
    pub fans: u32,
    /// Seed of every random choice: the same seed gives the same fans, behaviours,
    /// seat counts and arrival times.
    pub seed: u64,
    /// Compression of the fans' own timing: arrival spread and think times are divided
    /// by it (10 = ten times faster than life). Server-side times (hold TTL, admission
    /// rate) are the event's; the late payers wait for the real hold expiry. > 0.
    pub time_scale: f64,
    /// What fans do with their holds.
    pub shares: BehaviourShares,
    /// Fraction of fans joining before the on-sale time (the pre-queue), 0..=1.
    pub pre_queue_share: f64,
    /// Unscaled window after opening over which the other fans arrive.
    pub arrival_window: Duration,
    /// Unscaled think time range (min, max) before claiming and before paying.
    pub think_time: (Duration, Duration),
    /// Relative weights of wanting 1, 2, 3 or 4 seats (capped by the event's seats
    /// per claim).
    pub seats_wanted: [f64; 4],
    /// Fans with a join or a queue poll under way at once (a fan waiting between polls
    /// is a small record, not a task; an admitted fan shopping is not counted); later
    /// arrivals wait to start.
    pub max_in_flight: u32,
    /// RPCs in flight at once of the admitted fans, and as many again of the queued
    /// fans' joins and polls, so 2 cores are not swamped; calls that settle a payment
    /// are outside both (see `budget`).
    pub max_concurrent_rpcs: u32,
    /// Claims in one round of a fan's tries (first pick, alternatives, other sections);
    /// after a lost round the fan steps back for a think time and tries again while
    /// the sale goes on (see `max_queue_wait`).
    pub max_claim_attempts: u32,
    /// Exponent of the section skew: section of rank r (0 = best) is picked with
    /// weight 1 / (r + 1)^skew. 0 = uniform.
    pub section_skew: f64,
    /// Share of claims made with "best available" (holds picks the block); the others
    /// pick seats from the seat map's suggestions, fewer once the map shows less than a
    /// fifth of the house free. 0 to 1.
    pub best_available_share: f64,
    /// How long the shared seat map snapshot is reused before it is read again.
    pub map_refresh: Duration,
    /// Timeline sampling interval.
    pub sample_every: Duration,
    /// The waiting room's Redis, when the run may read its memory figures (`INFO
    /// memory`) with each sample: the report then gives Redis bytes per fan.
    pub redis_url: Option<String>,
    /// A fan still queued, or still trying to claim, after this long (real time) gives
    /// up.
    pub max_queue_wait: Duration,
    /// Payment method token given to Confirm (the simulated provider's `tok_visa`).
    pub payment_token: String,
    /// Of the paying fans whose first Confirm leaves the outcome open (a timeout, the
    /// provider unavailable), the share who close the page and look their order up
    /// later instead of asking again, so that only payments' own recovery settles
    /// their payment. 0 to 1.
    pub walk_away_share: f64,
    /// Every fan who confirms has a final answer about its payment (paid, refunded,
    /// failed, refused) within this long of its first Confirm, real time; a fan
    /// without one fails the run.
    pub final_answer_bound: Duration,
}

/// The default [`OnSaleOptions::final_answer_bound`]: two minutes. Payments takes
/// over a payment whose driver died once its lease (30 s by default) has run out, at
/// its next reconciler pass (every 5 s), and then waits at most one provider call
/// (10 s) and one holds call (3 s); a payment the provider never charged is marked
/// failed once 60 s old (the abandon age): about 70 s at most, with room for a
/// database restart.
pub const FINAL_ANSWER_BOUND: Duration = Duration::from_secs(120);

impl Default for OnSaleOptions {
    fn default() -> Self {
        OnSaleOptions {
            fans: 2_000,
            seed: 1,
            time_scale: 1.0,
            shares: BehaviourShares::default(),
            pre_queue_share: 0.8,
            arrival_window: Duration::from_secs(60),
            think_time: (Duration::from_secs(2), Duration::from_secs(10)),
            seats_wanted: [0.25, 0.45, 0.10, 0.20],
            max_in_flight: 20_000,
            max_concurrent_rpcs: 256,
            max_claim_attempts: 10,
            section_skew: 1.0,
            best_available_share: 0.8,
            map_refresh: Duration::from_secs(1),
            sample_every: Duration::from_millis(250),
            redis_url: None,
            max_queue_wait: Duration::from_secs(30 * 60),
            payment_token: "tok_visa".into(),
            walk_away_share: 0.5,
            final_answer_bound: FINAL_ANSWER_BOUND,
        }
    }
}

impl OnSaleOptions {
    /// Checks every field.
    ///
    /// Errors: [`LoadtestError::InvalidOption`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, reason: String| {
            Err(LoadtestError::InvalidOption { field, reason })
        };
        if !self.time_scale.is_finite() || self.time_scale <= 0.0 {
            return bad("time_scale", format!("{} is not > 0", self.time_scale));
        }
        self.shares.normalised()?;
        if !(0.0..=1.0).contains(&self.pre_queue_share) {
            return bad(
                "pre_queue_share",
                format!("{} is not in 0..=1", self.pre_queue_share),
            );
        }
        if self.think_time.0 > self.think_time.1 {
            return bad("think_time", "min exceeds max".into());
        }
        if self.seats_wanted.iter().any(|w| !w.is_finite() || *w < 0.0)
            || self.seats_wanted.iter().sum::<f64>() <= 0.0
        {
            return bad(
                "seats_wanted",
                "weights must be finite, >= 0, not all 0".into(),
            );
        }
        if self.max_in_flight == 0 {
            return bad("max_in_flight", "must be at least 1".into());
        }
        if self.max_concurrent_rpcs == 0 {
            return bad("max_concurrent_rpcs", "must be at least 1".into());
        }
        if self.max_claim_attempts == 0 {
            return bad("max_claim_attempts", "must be at least 1".into());
        }
        if !self.section_skew.is_finite() || self.section_skew < 0.0 {
            return bad("section_skew", format!("{} is not >= 0", self.section_skew));
        }
        if !(0.0..=1.0).contains(&self.best_available_share) {
            return bad(
                "best_available_share",
                format!("{} is not within 0..=1", self.best_available_share),
            );
        }
        if !(0.0..=1.0).contains(&self.walk_away_share) {
            return bad(
                "walk_away_share",
                format!("{} is not within 0..=1", self.walk_away_share),
            );
        }
        if self.final_answer_bound.is_zero() {
            return bad("final_answer_bound", "must be > 0".into());
        }
        if self.sample_every.is_zero() {
            return bad("sample_every", "must be > 0".into());
        }
        if self.payment_token.is_empty() {
            return bad("payment_token", "must not be empty".into());
        }
        Ok(())
    }

    /// The number of fans to simulate for a venue of `seats` seats (see
    /// [`Self::fans`]).
    pub fn fans_for(&self, seats: u64) -> u32 {
        if self.fans > 0 {
            return self.fans;
        }
        u32::try_from(seats.saturating_mul(3) / 4)
            .unwrap_or(u32::MAX)
            .max(1)
    }

    /// `d` compressed by [`Self::time_scale`].
    pub fn scaled(&self, d: Duration) -> Duration {
        d.div_f64(self.time_scale)
    }
}

/// The event [`crate::setup_event`] creates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventOptions {
    /// Event name.
    pub name: String,
    /// How long after the event is created its sale opens; the pre-queue fills in the
    /// meantime, so give the fans time to join.
    pub onsale_lead: Duration,
    /// Hold lifetime.
    pub hold_ttl: Duration,
    /// Seats one claim may take.
    pub max_seats_per_claim: u32,
    /// Seats one fan may hold or buy (>= `max_seats_per_claim`).
    pub max_seats_per_fan: u32,
    /// Admission rate, fans per minute.
    pub admission_rate_per_min: u32,
    /// Cap on admitted fans not yet done; 0 = none.
    pub active_fan_cap: u32,
    /// Admission token lifetime; zero = the server default (10 min).
    pub admission_ttl: Duration,
    /// How long an admitted fan may go without a claim before the waiting room takes
    /// the admission back; zero = never.
    pub admission_no_show: Duration,
    /// ISO 4217 currency of every price.
    pub currency: String,
    /// Price of the best category in minor units; each next category (in the venue's
    /// order) costs 20 % less, never below 10 % of this.
    pub top_price_minor: i64,
    /// Start a presale (StartPresale) rather than open the sale: until the on-sale time
    /// only fans with a presale code claim, admitted from the event's presale queue; the
    /// general on-sale then begins by itself.
    pub presale: bool,
}

impl Default for EventOptions {
    fn default() -> Self {
        EventOptions {
            name: "Load test on-sale".into(),
            onsale_lead: Duration::from_secs(10),
            hold_ttl: Duration::from_secs(120),
            max_seats_per_claim: 4,
            max_seats_per_fan: 4,
            admission_rate_per_min: 60_000,
            active_fan_cap: 0,
            admission_ttl: Duration::ZERO,
            admission_no_show: Duration::ZERO,
            currency: "EUR".into(),
            top_price_minor: 15_000,
            presale: false,
        }
    }
}

impl EventOptions {
    /// Price in minor units of the category at `index` in the venue's order.
    pub fn price_minor(&self, index: usize) -> i64 {
        let floor = self.top_price_minor / 10;
        let mut price = self.top_price_minor as f64;
        for _ in 0..index.min(64) {
            price *= 0.8;
        }
        (price.round() as i64).max(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        OnSaleOptions::default().validate().unwrap();
    }

    #[test]
    fn bad_options_name_their_field() {
        let mut o = OnSaleOptions {
            time_scale: 0.0,
            ..OnSaleOptions::default()
        };
        assert!(matches!(
            o.validate(),
            Err(LoadtestError::InvalidOption {
                field: "time_scale",
                ..
            })
        ));
        o.time_scale = 1.0;
        o.shares.abandon = -1.0;
        assert!(matches!(
            o.validate(),
            Err(LoadtestError::InvalidOption {
                field: "shares.abandon",
                ..
            })
        ));
    }

    #[test]
    fn shares_normalise_to_one() {
        let n = BehaviourShares {
            pay: 2.0,
            abandon: 1.0,
            pay_late: 1.0,
            double_confirm: 0.0,
        }
        .normalised()
        .unwrap();
        assert_eq!(n, [0.5, 0.25, 0.25, 0.0]);
    }

    #[test]
    fn unset_fans_follow_the_venue() {
        let unset = OnSaleOptions {
            fans: 0,
            ..OnSaleOptions::default()
        };
        assert_eq!(unset.fans_for(1_057), 792);
        assert_eq!(unset.fans_for(50_000), 37_500);
        assert_eq!(unset.fans_for(1), 1);
        let set = OnSaleOptions {
            fans: 5,
            ..OnSaleOptions::default()
        };
        assert_eq!(set.fans_for(50_000), 5);
    }

    #[test]
    fn prices_fall_by_category() {
        let e = EventOptions::default();
        assert_eq!(e.price_minor(0), 15_000);
        assert_eq!(e.price_minor(1), 12_000);
        assert_eq!(e.price_minor(40), 1_500);
    }
}
