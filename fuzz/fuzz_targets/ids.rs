//! The ids and seat lists a claim names, as a stranger may send them: each parsed or
//! refused, never a panic; a seat list that parses is ascending, without repeats, and
//! holds exactly the seats sent.
#![no_main]

use holds::domain::{EventId, FanId, HoldKey, RequestId, SeatSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = EventId::try_from(text.as_ref());
    let _ = FanId::try_from(text.as_ref());
    let _ = RequestId::try_from(text.as_ref());
    if let Ok(key) = HoldKey::try_from(text.as_ref()) {
        let again = HoldKey::try_from(key.to_string().as_str()).expect("a key reads back");
        assert_eq!(again, key);
    }
    let ids: Vec<u64> = data
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    if let Ok(seats) = SeatSet::from_wire(&ids) {
        let sorted: Vec<u64> = seats.as_slice().iter().map(|s| s.wire()).collect();
        assert!(sorted.windows(2).all(|w| w[0] < w[1]));
        let mut sent = ids.clone();
        sent.sort_unstable();
        assert_eq!(sorted, sent);
    }
});
