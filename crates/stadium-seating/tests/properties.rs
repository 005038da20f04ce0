//! Property tests: suggestions over random layouts and availability maps, and the
//! availability bitmap's wire round trip.

use proptest::prelude::*;
use stadium_seating::{Availability, Point, Preference, SeatPlace, SectionLayout, suggest};

/// A section with rows of the given lengths; `aisle` inserts a gap in seat indexes
/// after that many seats of each row, so runs break there.
fn layout(first_seat_id: u64, rows: &[u32], aisle: Option<u32>, focus: Point) -> SectionLayout {
    let mut seats = Vec::new();
    let mut seat_id = first_seat_id;
    for (r, n) in rows.iter().enumerate() {
        for i in 0..*n {
            let seat_index = match aisle {
                Some(a) if i >= a => i + 1,
                _ => i,
            };
            seats.push(SeatPlace {
                seat_id,
                row_index: r as u32,
                row_label: format!("{}", r + 1),
                seat_index,
                seat_label: format!("{}", i + 1),
                position: Point {
                    x: f64::from(seat_index) * 30.0,
                    y: r as f64 * 40.0,
                },
            });
            seat_id += 1;
        }
    }
    SectionLayout::new(first_seat_id % 97 + 1, focus, seats).expect("generated layout is valid")
}

fn section() -> impl Strategy<Value = (SectionLayout, Vec<bool>)> {
    (
        1u64..10_000,
        prop::collection::vec(1u32..25, 1..12),
        prop::option::of(1u32..10),
        (-100.0f64..800.0, -100.0f64..500.0),
    )
        .prop_flat_map(|(first, rows, aisle, (fx, fy))| {
            let total: u32 = rows.iter().sum();
            let l = layout(first, &rows, aisle, Point { x: fx, y: fy });
            (
                Just(l),
                prop::collection::vec(prop::bool::weighted(0.6), total as usize),
            )
        })
}

proptest! {
    #[test]
    fn suggestions_are_available_contiguous_and_sized(
        (layout, free) in section(),
        quantity in 1u32..8,
        limit in 0usize..6,
        prefer_point in prop::option::of((-200.0f64..900.0, -200.0f64..600.0)),
    ) {
        let first = layout.first_seat_id();
        let availability = Availability::from_unavailable(
            first,
            layout.seat_count(),
            free.iter().enumerate().filter(|(_, f)| !**f).map(|(i, _)| first + i as u64),
        ).unwrap();
        let preference = prefer_point.map_or(Preference::BestView, |(x, y)| Preference::Point(Point { x, y }));
        let got = suggest(&[(&layout, &availability)], quantity, preference, limit).unwrap();
        prop_assert!(got.len() <= limit);
        let mut seen = std::collections::HashSet::new();
        for s in &got {
            prop_assert_eq!(s.seat_ids.len(), quantity as usize);
            prop_assert!(s.seat_ids.windows(2).all(|w| w[0] < w[1]));
            for id in &s.seat_ids {
                prop_assert!(availability.is_available(*id), "seat {} is not available", id);
                prop_assert!(seen.insert(*id), "seat {} is suggested twice", id);
                prop_assert_eq!(layout.seat(*id).unwrap().row_index, s.row_index);
            }
            prop_assert!(layout.is_contiguous_block(&s.seat_ids));
        }
        prop_assert!(got.windows(2).all(|w| w[0].score <= w[1].score));
        // Stranding only where unavoidable: a stranding suggestion is never ranked
        // before one that strands nobody.
        prop_assert!(got.windows(2).all(|w| w[0].stranded <= w[1].stranded || w[0].stranded == 0));
        // When a block exists at all, at least one is suggested.
        let any_block = layout.rows().iter().any(|row| {
            let seats = layout.seats();
            row.offsets().windows(quantity as usize).any(|w| {
                w.iter().all(|o| availability.is_available_at(*o as usize))
                    && w.windows(2).all(|p| seats[p[1] as usize].seat_index == seats[p[0] as usize].seat_index + 1)
            })
        });
        prop_assert_eq!(any_block && limit > 0, !got.is_empty());
    }

    #[test]
    fn bitmap_round_trips(first in 0u64..1_000_000, free in prop::collection::vec(any::<bool>(), 0..300)) {
        let count = free.len() as u32;
        let taken = free.iter().enumerate().filter(|(_, f)| !**f).map(|(i, _)| first + i as u64);
        let a = Availability::from_unavailable(first, count, taken).unwrap();
        prop_assert_eq!(a.bitmap().len(), free.len().div_ceil(8));
        prop_assert_eq!(a.available() as usize, free.iter().filter(|f| **f).count());
        for (i, f) in free.iter().enumerate() {
            prop_assert_eq!(a.is_available(first + i as u64), *f);
        }
        let decoded = Availability::from_bitmap(first, count, a.bitmap()).unwrap();
        prop_assert_eq!(&decoded, &a);
        let ids: Vec<u64> = decoded.available_ids().collect();
        let expected: Vec<u64> = free.iter().enumerate().filter(|(_, f)| **f).map(|(i, _)| first + i as u64).collect();
        prop_assert_eq!(ids, expected);
    }
}
