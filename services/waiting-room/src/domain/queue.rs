//! The queue of one event as a replica sees it (a [`QueueSnapshot`] read from Redis),
//! and what it means for one queue number ([`Standing`]).
//!
//! Admission credit is kept in integer units of 1/60000 fan: a rate of `r` fans per
//! minute earns `r` units per millisecond, so credit never needs fractions and the
//! fraction of the next fan is carried over exactly across rate changes and pauses.

use super::Inventory;

/// Credit units that admit one fan (one fan per minute earns this much per minute).
pub const CREDIT_PER_FAN: u64 = 60_000;

/// The sale's lifecycle in the waiting room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaleState {
    /// Set up; joins enter the pre-queue until the on-sale time.
    Scheduled,
    /// Open: numbers are handed out and the frontier advances (unless paused).
    Open,
    /// Closed: no joins, no admissions.
    Closed,
}

impl SaleState {
    /// Parses the name stored in Redis (`scheduled`, `open`, `closed`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "scheduled" => Some(Self::Scheduled),
            "open" => Some(Self::Open),
            "closed" => Some(Self::Closed),
            _ => None,
        }
    }

    /// The name stored in Redis.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Open => "open",
            Self::Closed => "closed",
        }
    }
}

/// One event's queue at one instant, as computed atomically in Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSnapshot {
    /// Lifecycle state.
    pub state: SaleState,
    /// Whether an admin paused admission (the frontier holds still).
    pub paused: bool,
    /// Admission rate, fans per minute (> 0).
    pub fans_per_minute: u32,
    /// Cap on admitted fans not yet done; 0 = none.
    pub active_fan_cap: u32,
    /// Lifetime of admission tokens, milliseconds.
    pub admission_ttl_ms: u64,
    /// Earned admission credit, in units of 1/[`CREDIT_PER_FAN`] fan.
    pub credit: u64,
    /// The frontier: highest admitted queue number (0 = nobody yet).
    pub frontier: u64,
    /// Fans who joined, pre-queue included.
    pub joined: u64,
    /// Highest queue number handed out (0: none yet). A signed ticket numbered above
    /// it is from before the store lost its data.
    pub numbered: u64,
    /// Fans admitted whose admission has neither expired nor completed.
    pub active: u64,
    /// Admissions reported complete.
    pub completed: u64,
    /// Revocations so far (the revocation set's version): a replica's copy of a fan's
    /// admission token made at another version is checked against the store again.
    pub revocations: u64,
    /// Admissions taken back for want of a claim in time.
    pub no_shows: u64,
    /// On-sale instant, Unix milliseconds.
    pub onsale_ms: u64,
    /// Fans in the pre-queue (before opening) or shuffled at opening (after).
    pub pre_queue: u64,
    /// The instant the snapshot describes, Unix milliseconds.
    pub as_of_ms: u64,
    /// The latest inventory report while it is fresh (`None`: none, or stale).
    pub inventory: Option<Inventory>,
}

/// Where one queue number stands in a [`QueueSnapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// In the pre-queue: no number before opening.
    PreQueue,
    /// Numbered, waiting for the frontier.
    Waiting {
        /// Fans ahead not yet admitted.
        position: u64,
        /// Estimated wait at the current rate, milliseconds.
        estimated_wait_ms: u64,
    },
    /// As `Waiting`, but admission is paused.
    Paused {
        /// Fans ahead not yet admitted.
        position: u64,
        /// Estimated wait once resumed, at the current rate, milliseconds.
        estimated_wait_ms: u64,
    },
    /// The frontier has passed the number.
    Admitted,
    /// Not admitted, and no seat is free or held (a fresh inventory report).
    SoldOut {
        /// Fans ahead not yet admitted.
        position: u64,
    },
    /// The sale is closed.
    Closed,
    /// The event is cancelled (the sale is closed for good).
    Cancelled,
}

impl QueueSnapshot {
    /// Where queue number `number` (0 = pre-queue) stands, `now_ms` being the caller's
    /// clock (the wait estimate subtracts the time elapsed since the snapshot).
    pub fn standing(&self, number: u64, now_ms: u64) -> Standing {
        if self.state == SaleState::Closed {
            return Standing::Closed;
        }
        if number == 0 || self.state == SaleState::Scheduled {
            return Standing::PreQueue;
        }
        if number <= self.frontier {
            return Standing::Admitted;
        }
        let position = number - self.frontier - 1;
        if self.sold_out() {
            return Standing::SoldOut { position };
        }
        let wait = wait_ms(number, self.credit, self.fans_per_minute);
        if self.paused {
            Standing::Paused {
                position,
                estimated_wait_ms: wait,
            }
        } else {
            let aged = now_ms.saturating_sub(self.as_of_ms);
            Standing::Waiting {
                position,
                estimated_wait_ms: wait.saturating_sub(aged),
            }
        }
    }

    /// Whether a cap holds the frontier: as many fans active as the active-fan cap or
    /// the seats left allow. The next admission then waits for a place to free (a fan
    /// done, an admission or hold lapsing), not for the rate.
    pub fn held_back(&self) -> bool {
        let by_cap = self.active_fan_cap > 0 && self.active >= u64::from(self.active_fan_cap);
        let by_seats = self.inventory.is_some_and(|i| self.active >= i.fan_cap());
        by_cap || by_seats
    }

    /// Whether a fresh inventory report shows no seat free or held.
    pub fn sold_out(&self) -> bool {
        self.inventory.is_some_and(|i| i.sold_out())
    }

    /// Fans joined and not yet admitted.
    pub fn waiting(&self) -> u64 {
        self.joined.saturating_sub(self.frontier)
    }
}

/// Milliseconds until the credit reaches `number` fans at `fans_per_minute`, rounded up.
pub fn wait_ms(number: u64, credit: u64, fans_per_minute: u32) -> u64 {
    let needed = number.saturating_mul(CREDIT_PER_FAN).saturating_sub(credit);
    let rate = u64::from(fans_per_minute.max(1));
    needed.div_ceil(rate)
}

/// The credit after `elapsed_ms` at `fans_per_minute`, never above `limit` fans' worth:
/// the model the Redis scripts implement (see `store::scripts`). Capping at a bound
/// that only changes when the state is written makes the result independent of how
/// often it is evaluated, which is why replicas polling at different moments agree.
pub fn accrue(credit: u64, fans_per_minute: u32, elapsed_ms: u64, limit_fans: u64) -> u64 {
    let earned = credit.saturating_add(u64::from(fans_per_minute).saturating_mul(elapsed_ms));
    earned.min(limit_fans.saturating_mul(CREDIT_PER_FAN).max(credit))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn snapshot() -> QueueSnapshot {
        QueueSnapshot {
            state: SaleState::Open,
            paused: false,
            fans_per_minute: 600,
            active_fan_cap: 0,
            admission_ttl_ms: 600_000,
            credit: 10 * CREDIT_PER_FAN + 30_000,
            frontier: 10,
            joined: 100,
            numbered: 100,
            revocations: 0,
            no_shows: 0,
            active: 10,
            completed: 0,
            onsale_ms: 0,
            pre_queue: 0,
            as_of_ms: 1_000,
            inventory: None,
        }
    }

    #[test]
    fn standing_follows_the_frontier() {
        let s = snapshot();
        assert_eq!(s.standing(10, 1_000), Standing::Admitted);
        // Number 12: 1.5 fans of credit missing at 10 fans/s = 150 ms.
        assert_eq!(
            s.standing(12, 1_000),
            Standing::Waiting {
                position: 1,
                estimated_wait_ms: 150
            }
        );
        assert_eq!(
            s.standing(12, 1_100),
            Standing::Waiting {
                position: 1,
                estimated_wait_ms: 50
            }
        );
        assert_eq!(s.standing(0, 1_000), Standing::PreQueue);
        let paused = QueueSnapshot {
            paused: true,
            ..s.clone()
        };
        assert!(matches!(
            paused.standing(12, 5_000),
            Standing::Paused { position: 1, .. }
        ));
        let sold_out = QueueSnapshot {
            inventory: Some(Inventory {
                free_seats: 0,
                held_seats: 0,
                holds: 0,
                seats_per_fan_at_first: 1,
                as_of_ms: 900,
                covered_seats: 0,
            }),
            ..s.clone()
        };
        assert_eq!(
            sold_out.standing(12, 1_000),
            Standing::SoldOut { position: 1 }
        );
        assert!(sold_out.held_back(), "no seats: no room for anyone");
        assert!(!s.held_back());
        let capped = QueueSnapshot {
            active_fan_cap: 10,
            ..s.clone()
        };
        assert!(capped.held_back());
        // Fans already admitted keep their admission.
        assert_eq!(sold_out.standing(10, 1_000), Standing::Admitted);
        let closed = QueueSnapshot {
            state: SaleState::Closed,
            ..sold_out
        };
        assert_eq!(closed.standing(1, 0), Standing::Closed);
        assert_eq!(closed.standing(12, 0), Standing::Closed);
    }

    proptest! {
        // Evaluating in two steps gives what one step gives: replicas that refresh at
        // different instants compute the same frontier.
        #[test]
        fn accrual_is_path_independent(
            credit in 0u64..1_000_000_000,
            rate in 1u32..100_000,
            a in 0u64..10_000_000,
            b in 0u64..10_000_000,
            limit in 0u64..100_000,
        ) {
            let start = credit.min(limit * CREDIT_PER_FAN);
            let once = accrue(start, rate, a + b, limit);
            let twice = accrue(accrue(start, rate, a, limit), rate, b, limit);
            prop_assert_eq!(once, twice);
        }

        // Never faster than the rate: the admitted count after t ms is at most
        // floor(rate * t / 60000) above where it started.
        #[test]
        fn accrual_never_beats_the_rate(
            rate in 1u32..100_000,
            steps in proptest::collection::vec(0u64..100_000, 1..50),
            limit in 0u64..1_000_000,
        ) {
            let mut credit = 0;
            let mut elapsed = 0;
            for step in steps {
                credit = accrue(credit, rate, step, limit);
                elapsed += step;
                prop_assert!(credit / CREDIT_PER_FAN <= u64::from(rate) * elapsed / CREDIT_PER_FAN);
                prop_assert!(credit / CREDIT_PER_FAN <= limit);
            }
        }
    }
}
