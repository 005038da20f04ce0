//! An event's seat inventory as the box office last reported it, and what it means for
//! admission: how many active fans the seats left can serve, and whether the event is
//! sold out. The Lua in `store::scripts` computes the same cap (`inventory_cap`); the
//! two are kept equal by the tests below and the store's tests.

/// Seat counts of one event at one instant (`ReportInventory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inventory {
    /// Seats neither held, booked nor blocked.
    pub free_seats: u64,
    /// Seats in unexpired holds.
    pub held_seats: u64,
    /// Unexpired holds those seats belong to (at most `held_seats`).
    pub holds: u64,
    /// Seats a fan is counted as taking while no hold exists (the event's per-claim
    /// limit; at least 1).
    pub seats_per_fan_at_first: u64,
    /// When the database counted them, Unix milliseconds.
    pub as_of_ms: u64,
    /// Free seats covered by the waiting list's offers at its last step: the list's,
    /// not the queue's (0 in a report; read back with the snapshot).
    pub covered_seats: u64,
}

impl Inventory {
    /// Active admitted fans the seats can serve: the free and held seats divided by
    /// the seats of an average hold (`held_seats / holds`; while nothing is held,
    /// `seats_per_fan_at_first`, so the opening burst is not a fan per free seat, and
    /// rounded up: fewer free seats than the per-claim limit still serve a fan, who
    /// may want only that many; rounded down, the queue would stall for good, neither
    /// admitting nor sold out).
    /// A fan who holds seats counts among them, so the cap leaves room for one new fan
    /// per average hold's worth of free seats.
    /// Free seats covered by waiting-list offers do not count.
    pub fn fan_cap(&self) -> u64 {
        let seats = self.queue_free_seats().saturating_add(self.held_seats);
        if self.holds == 0 || self.held_seats == 0 {
            return seats.div_ceil(self.seats_per_fan_at_first.max(1));
        }
        let fans = u128::from(seats) * u128::from(self.holds) / u128::from(self.held_seats);
        u64::try_from(fans).unwrap_or(u64::MAX)
    }

    /// No seat free for the queue (none, or every one covered by a waiting-list
    /// offer) and none held: nothing left to sell unless seats come back.
    pub fn sold_out(&self) -> bool {
        self.queue_free_seats() == 0 && self.held_seats == 0
    }

    /// Free seats left to the queue: those not covered by waiting-list offers.
    pub fn queue_free_seats(&self) -> u64 {
        self.free_seats.saturating_sub(self.covered_seats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(free_seats: u64, held_seats: u64, holds: u64) -> Inventory {
        Inventory {
            free_seats,
            held_seats,
            holds,
            seats_per_fan_at_first: 4,
            as_of_ms: 0,
            covered_seats: 0,
        }
    }

    #[test]
    fn the_cap_counts_fans_by_the_average_hold() {
        // Nothing held yet: every fan counted at the per-claim limit (4).
        assert_eq!(inventory(50_000, 0, 0).fan_cap(), 12_500);
        // Fewer free seats than a claim may take still serve one fan (an on-sale
        // once stalled at 2 free seats: nobody admitted, nobody told sold out).
        assert_eq!(inventory(2, 0, 0).fan_cap(), 1);
        assert_eq!(inventory(5, 0, 0).fan_cap(), 2);
        // 2.5 seats per hold: 100 seats serve 40 fans.
        assert_eq!(inventory(50, 50, 20).fan_cap(), 40);
        // Rounded down: 7 seats at 2 per hold serve 3 fans.
        assert_eq!(inventory(3, 4, 2).fan_cap(), 3);
        // All held, none free: only the holders.
        assert_eq!(inventory(0, 40, 16).fan_cap(), 16);
        assert_eq!(inventory(0, 0, 0).fan_cap(), 0);
    }

    #[test]
    fn sold_out_means_nothing_free_and_nothing_held() {
        assert!(inventory(0, 0, 0).sold_out());
        assert!(!inventory(0, 2, 1).sold_out());
        assert!(!inventory(1, 0, 0).sold_out());
    }

    #[test]
    fn seats_the_waiting_list_covers_are_not_the_queues() {
        let covered = |free, held, holds, covered_seats| Inventory {
            covered_seats,
            ..inventory(free, held, holds)
        };
        assert!(covered(5, 0, 0, 5).sold_out());
        assert_eq!(covered(5, 0, 0, 5).fan_cap(), 0);
        assert!(!covered(5, 2, 1, 5).sold_out());
        assert_eq!(covered(12, 0, 0, 4).fan_cap(), 2);
        // Covered seats a later count no longer shows free leave nothing, not less.
        assert_eq!(covered(2, 0, 0, 6).queue_free_seats(), 0);
    }
}
