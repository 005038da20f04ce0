//! A pretix seating plan (JSON) from anywhere: parsed or refused with an error, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(plan) = stadium_venues::parse_pretix(data) {
        // Each seat is an object of its own in the input.
        let seats = plan.seat_count();
        assert!(
            seats <= data.len(),
            "{seats} seats from {} bytes",
            data.len()
        );
    }
});
