//! Alternatives offered with a `SEAT_TAKEN` answer: as many free seats as were asked
//! for, in the same section, side by side in one row, as near as possible to the seats
//! the fan wanted.
//!
//! [`offer`] asks the shared best-available engine (`stadium-seating`, the seat map's
//! own logic) for the best adjacent block near the first wanted seat. When it has none
//! (no block of that size is free, or the section's ids are not one contiguous range),
//! [`suggest`] falls back to the nearest free seats by row and seat index.

use std::collections::{BTreeMap, HashSet};

use stadium_seating::{Availability, Point, Preference, SectionLayout};

use super::{SeatId, SeatSet, SectionId};

/// A seat of the section as read for a refusal.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionSeat {
    /// Where the seat is (ids and indexes).
    pub place: SeatPlace,
    /// Row label shown to fans.
    pub row_label: String,
    /// Seat label shown to fans.
    pub seat_label: String,
    /// Plan position, x.
    pub x: f64,
    /// Plan position, y.
    pub y: f64,
    /// Free right now (no active claim).
    pub available: bool,
}

/// Up to `requested.len()` free seats of `section` (whose seats are `seats`) offered in
/// place of `requested`, ascending; empty when the section cannot seat that many.
pub fn offer(section: SectionId, seats: &[SectionSeat], requested: &SeatSet) -> Vec<SeatId> {
    let wanted: HashSet<SeatId> = requested.as_slice().iter().copied().collect();
    if let Some(block) = best_block(section, seats, requested, &wanted) {
        return block;
    }
    let wanted_places: Vec<SeatPlace> = seats
        .iter()
        .filter(|s| wanted.contains(&s.place.seat))
        .map(|s| s.place)
        .collect();
    let free: Vec<SeatPlace> = seats
        .iter()
        .filter(|s| s.available && !wanted.contains(&s.place.seat))
        .map(|s| s.place)
        .collect();
    suggest(&wanted_places, &free, requested.len())
}

/// The seating engine's best block, or `None` when it has none or cannot run.
fn best_block(
    section: SectionId,
    seats: &[SectionSeat],
    requested: &SeatSet,
    wanted: &HashSet<SeatId>,
) -> Option<Vec<SeatId>> {
    let places = seats
        .iter()
        .map(|s| {
            Some(stadium_seating::SeatPlace {
                seat_id: s.place.seat.wire(),
                row_index: u32::try_from(s.place.row).ok()?,
                row_label: s.row_label.clone(),
                seat_index: u32::try_from(s.place.index).ok()?,
                seat_label: s.seat_label.clone(),
                position: Point { x: s.x, y: s.y },
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let layout = SectionLayout::new(section.wire(), Point { x: 0.0, y: 0.0 }, places).ok()?;
    // The wanted seats are not on offer even if they came free in the meantime: the
    // fan is being told they were taken.
    let unavailable = seats
        .iter()
        .filter(|s| !s.available || wanted.contains(&s.place.seat))
        .map(|s| s.place.seat.wire());
    let availability =
        Availability::from_unavailable(layout.first_seat_id(), layout.seat_count(), unavailable)
            .ok()?;
    let near = requested.as_slice().first()?.wire();
    let quantity = u32::try_from(requested.len()).ok()?;
    let best = stadium_seating::suggest(
        &[(&layout, &availability)],
        quantity,
        Preference::NearSeat(near),
        1,
    )
    .ok()?
    .into_iter()
    .next()?;
    best.seat_ids
        .into_iter()
        .map(|id| SeatId::try_from(id).ok())
        .collect()
}

/// A seat's place in its section: row and position within the row (catalog
/// `row_index`, `seat_index`; neighbours in a row differ by one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeatPlace {
    /// The seat.
    pub seat: SeatId,
    /// Row index within the section.
    pub row: i32,
    /// Seat index within the row.
    pub index: i32,
}

/// Rows count this much more than seats along a row when measuring distance: moving a
/// row changes the view more than sliding a few seats sideways.
const ROW_WEIGHT: f64 = 3.0;

/// Up to `count` free seats near `wanted`: the nearest block of `count` adjacent seats in
/// one row if there is one, else the `count` nearest free seats. Empty when `free` has
/// fewer than `count` seats or `count` is zero. The result is ascending and a subset of
/// `free` (which must not contain the seats that were taken).
pub fn suggest(wanted: &[SeatPlace], free: &[SeatPlace], count: usize) -> Vec<SeatId> {
    if count == 0 || free.len() < count {
        return Vec::new();
    }
    let (target_row, target_index) =
        centre(wanted).unwrap_or_else(|| centre(free).unwrap_or((0.0, 0.0)));
    let distance =
        |row: f64, index: f64| (row - target_row).abs() * ROW_WEIGHT + (index - target_index).abs();

    let mut rows: BTreeMap<i32, Vec<SeatPlace>> = BTreeMap::new();
    for place in free {
        rows.entry(place.row).or_default().push(*place);
    }
    let mut best: Option<(f64, SeatId, &[SeatPlace])> = None;
    for seats in rows.values_mut() {
        seats.sort_unstable_by_key(|p| (p.index, p.seat));
        seats.dedup_by_key(|p| p.index);
    }
    for seats in rows.values() {
        for window in seats.windows(count) {
            let adjacent = window
                .windows(2)
                .all(|pair| i64::from(pair[1].index) - i64::from(pair[0].index) == 1);
            if !adjacent {
                continue;
            }
            let mid = window.iter().map(|p| f64::from(p.index)).sum::<f64>() / count as f64;
            let score = distance(f64::from(window[0].row), mid);
            let first = window
                .iter()
                .map(|p| p.seat)
                .min()
                .unwrap_or(window[0].seat);
            let better = match &best {
                None => true,
                Some((s, f, _)) => score < *s || (score == *s && first < *f),
            };
            if better {
                best = Some((score, first, window));
            }
        }
    }
    let mut chosen: Vec<SeatId> = match best {
        Some((_, _, window)) => window.iter().map(|p| p.seat).collect(),
        None => {
            let mut nearest: Vec<&SeatPlace> = free.iter().collect();
            nearest.sort_by(|a, b| {
                distance(f64::from(a.row), f64::from(a.index))
                    .total_cmp(&distance(f64::from(b.row), f64::from(b.index)))
                    .then(a.seat.cmp(&b.seat))
            });
            nearest.dedup_by_key(|p| p.seat);
            nearest.into_iter().take(count).map(|p| p.seat).collect()
        }
    };
    chosen.sort_unstable();
    chosen.dedup();
    if chosen.len() < count {
        return Vec::new();
    }
    chosen
}

fn centre(places: &[SeatPlace]) -> Option<(f64, f64)> {
    if places.is_empty() {
        return None;
    }
    let n = places.len() as f64;
    let row = places.iter().map(|p| f64::from(p.row)).sum::<f64>() / n;
    let index = places.iter().map(|p| f64::from(p.index)).sum::<f64>() / n;
    Some((row, index))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn place(seat: u64, row: i32, index: i32) -> SeatPlace {
        SeatPlace {
            seat: SeatId::try_from(seat).unwrap(),
            row,
            index,
        }
    }

    /// A section of `rows` × `per_row` seats, seat ids row-major from 1.
    fn grid(rows: i32, per_row: i32) -> Vec<SeatPlace> {
        let mut out = Vec::new();
        for r in 0..rows {
            for i in 0..per_row {
                out.push(place((r * per_row + i + 1) as u64, r, i));
            }
        }
        out
    }

    fn ids(v: &[SeatId]) -> Vec<u64> {
        v.iter().map(|s| s.wire()).collect()
    }

    #[test]
    fn prefers_adjacent_seats_next_to_the_wanted_ones() {
        let all = grid(3, 10);
        // Wanted row 1 seats 4,5 (ids 15,16); they are taken, so not free.
        let wanted = [all[14], all[15]];
        let free: Vec<_> = all
            .iter()
            .copied()
            .filter(|p| !wanted.contains(p))
            .collect();
        let got = suggest(&wanted, &free, 2);
        assert_eq!(got.len(), 2);
        let rows: Vec<i32> = got
            .iter()
            .map(|s| free.iter().find(|p| p.seat == *s).unwrap().row)
            .collect();
        assert_eq!(rows, vec![1, 1], "same row is nearest: {:?}", ids(&got));
    }

    #[test]
    fn falls_back_to_nearest_when_no_block_fits() {
        // Only every other seat free: no two adjacent.
        let free: Vec<_> = grid(1, 10)
            .into_iter()
            .filter(|p| p.index % 2 == 0)
            .collect();
        let got = suggest(&[place(100, 0, 5)], &free, 2);
        assert_eq!(ids(&got), vec![5, 7]);
        assert!(suggest(&[], &free[..1], 2).is_empty());
        assert!(suggest(&[], &free, 0).is_empty());
    }

    #[test]
    fn offer_uses_the_seating_engine_for_an_adjacent_block() {
        let all = grid(2, 6);
        let section = SectionId::try_from(1u64).unwrap();
        // Row 0 seats 2,3 wanted and taken; row 0 seat 4 taken by someone else.
        let taken = [3u64, 4, 5];
        let seats: Vec<SectionSeat> = all
            .iter()
            .map(|p| SectionSeat {
                place: *p,
                row_label: p.row.to_string(),
                seat_label: p.index.to_string(),
                x: f64::from(p.index),
                y: f64::from(p.row),
                available: !taken.contains(&p.seat.wire()),
            })
            .collect();
        let requested = SeatSet::from_wire(&[3, 4]).unwrap();
        let got = offer(section, &seats, &requested);
        assert_eq!(got.len(), 2);
        for s in &got {
            assert!(!taken.contains(&s.wire()), "{got:?}");
        }
        assert_eq!(got[1].wire() - got[0].wire(), 1, "adjacent: {got:?}");
        // A hole in the id range stops the engine; the fallback still answers.
        let holed: Vec<SectionSeat> = seats
            .iter()
            .filter(|s| s.place.seat.wire() != 12)
            .cloned()
            .collect();
        assert_eq!(offer(section, &holed, &requested).len(), 2);
    }

    proptest! {
        #[test]
        fn suggestions_are_free_distinct_and_complete(
            taken in proptest::collection::hash_set(1u64..=40, 0..40),
            count in 1usize..6,
        ) {
            let all = grid(4, 10);
            let free: Vec<_> = all.iter().copied().filter(|p| !taken.contains(&p.seat.wire())).collect();
            let wanted: Vec<_> = all.iter().copied().filter(|p| taken.contains(&p.seat.wire())).take(count).collect();
            let got = suggest(&wanted, &free, count);
            if free.len() < count {
                prop_assert!(got.is_empty());
            } else {
                prop_assert_eq!(got.len(), count);
            }
            for w in got.windows(2) {
                prop_assert!(w[0] < w[1]);
            }
            for s in &got {
                prop_assert!(free.iter().any(|p| p.seat == *s));
            }
            // If any row has `count` adjacent free seats, the answer is such a block.
            let has_block = (0..4).any(|r| {
                let row: Vec<i32> = free.iter().filter(|p| p.row == r).map(|p| p.index).collect();
                row.windows(count).any(|w| w.last().unwrap() - w[0] == count as i32 - 1)
            });
            if has_block {
                let places: Vec<_> = got.iter().map(|s| *free.iter().find(|p| p.seat == *s).unwrap()).collect();
                prop_assert!(places.iter().all(|p| p.row == places[0].row));
                prop_assert_eq!(places.last().unwrap().index - places[0].index, count as i32 - 1);
            }
        }
    }
}
