//! Seats offered lately: the seats of the suggestions this process answered within the
//! staleness bound, per (event, section). A suggestion is drawn from availability up
//! to a bound old, so fans asking at once were all offered the same best blocks and
//! all but one lost them (`SEAT_TAKEN`). The next requests are offered other seats
//! while any fit, and the offered ones again once the bound has passed, when the
//! snapshot shows whether they were taken. A hint for ordering suggestions only: holds
//! decides every claim, and a seat offered to one fan may still be claimed by another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use stadium_seating::Availability;

use crate::domain::EventId;

/// Sections whose offers are kept at once (a stadium's hundred sections for a few
/// hundred events); a section pushed out only loses its hint.
const SECTIONS: u64 = 50_000;

/// The seats of a section offered lately, each with when.
type SectionOffers = Arc<Mutex<HashMap<u64, Instant>>>;

/// Seats offered lately, per (event, section).
#[derive(Debug)]
pub struct Offered {
    sections: moka::sync::Cache<(EventId, u64), SectionOffers>,
    for_how_long: Duration,
}

impl Offered {
    /// Offers passed over for `for_how_long` (the staleness bound).
    pub fn new(for_how_long: Duration) -> Self {
        Self {
            sections: moka::sync::Cache::builder()
                .max_capacity(SECTIONS)
                .time_to_idle(for_how_long.max(Duration::from_millis(1)))
                .build(),
            for_how_long,
        }
    }

    /// Marks `seats` of `section` of `event` offered now.
    pub fn mark(&self, event: EventId, section: u64, seats: &[u64]) {
        let offers = self
            .sections
            .get_with((event, section), SectionOffers::default);
        let now = Instant::now();
        let mut offers = offers.lock().unwrap_or_else(PoisonError::into_inner);
        offers.retain(|_, at| now.duration_since(*at) < self.for_how_long);
        for &seat in seats {
            offers.insert(seat, now);
        }
    }

    /// Clears in `availability` (of `section` of `event`) the seats offered within the
    /// last `for_how_long`; whether it cleared any.
    pub fn pass_over(&self, event: EventId, section: u64, availability: &mut Availability) -> bool {
        let Some(offers) = self.sections.get(&(event, section)) else {
            return false;
        };
        let now = Instant::now();
        let offers = offers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut cleared = false;
        for (&seat, at) in offers.iter() {
            if now.duration_since(*at) < self.for_how_long && availability.is_available(seat) {
                // Offered seats are seats of this section: in range.
                cleared |= availability.set(seat, false).is_ok();
            }
        }
        cleared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> EventId {
        EventId::try_from("7").unwrap()
    }

    #[test]
    fn offered_seats_are_passed_over_in_their_section_only() {
        let offered = Offered::new(Duration::from_secs(60));
        offered.mark(event(), 1, &[10, 11]);
        let mut seats = Availability::all_available(10, 5).unwrap();
        assert!(offered.pass_over(event(), 1, &mut seats));
        let free: Vec<u64> = (10..15).filter(|s| seats.is_available(*s)).collect();
        assert_eq!(free, [12, 13, 14]);
        let mut other = Availability::all_available(10, 5).unwrap();
        assert!(!offered.pass_over(event(), 2, &mut other));
        assert!(!offered.pass_over(EventId::try_from("8").unwrap(), 1, &mut other));
    }

    #[test]
    fn offers_older_than_the_bound_are_not_passed_over() {
        let offered = Offered::new(Duration::ZERO);
        offered.mark(event(), 1, &[10]);
        let mut seats = Availability::all_available(10, 5).unwrap();
        assert!(!offered.pass_over(event(), 1, &mut seats));
        assert!(seats.is_available(10));
    }
}
