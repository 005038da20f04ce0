//! A seats.io chart (JSON) from anywhere: parsed or refused with an error, never a
//! panic; and the format detection never panics on the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    stadium_venues::detect_format(data);
    if let Ok(plan) = stadium_venues::parse_seatsio(data) {
        // Each seat is an object of its own in the input.
        let seats = plan.seat_count();
        assert!(
            seats <= data.len(),
            "{seats} seats from {} bytes",
            data.len()
        );
    }
});
