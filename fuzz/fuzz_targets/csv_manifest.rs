//! A CSV seat manifest (`section,row,seat,category[,x,y]`) from anywhere: parsed or
//! refused with an error, never a panic; a manifest that parses has at most one seat per
//! record.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(plan) = stadium_venues::parse_csv("fuzz", data) {
        let seats = plan.seat_count();
        let records = data.iter().filter(|&&b| b == b'\n' || b == b'\r').count() + 1;
        assert!(seats <= records, "{seats} seats from {records} lines");
    }
});
