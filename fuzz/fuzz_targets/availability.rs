//! A seat map's availability bitmap as it comes off the wire: decoded or refused, never
//! a panic; a decoded map counts exactly the seats it lists, all within its range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stadium_seating::Availability;

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 {
        return;
    }
    let first = u64::from_le_bytes(data[..8].try_into().unwrap());
    // At most a few thousand seats per section, as on the wire; the rest is the bitmap.
    let count = u32::from_le_bytes(data[8..12].try_into().unwrap()) % 65_536;
    if let Ok(map) = Availability::from_bitmap(first, count, &data[12..]) {
        let ids: Vec<u64> = map.available_ids().collect();
        assert_eq!(ids.len(), map.available() as usize);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for id in ids {
            assert!(id >= first && id - first < u64::from(count));
            assert!(map.is_available(id));
        }
    }
});
