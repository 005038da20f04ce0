//! Best available seats.
//!
//! A candidate is a window of `quantity` seats inside a run of available, adjacent
//! seats of one row (adjacent = seat indexes differ by exactly 1, so aisles break runs).
//! Its score is the distance from the window's centroid to the preferred point, plus a
//! penalty for each side of the window that would leave exactly one free seat behind
//! (a single seat next to taken ones rarely sells). The penalty exceeds every possible
//! distance in the plan, so any candidate that strands nobody ranks before any that
//! does: stranding happens only where it cannot be avoided. Suggestions returned are
//! disjoint, so each is a real alternative to the others.

use std::collections::HashSet;

use crate::availability::Availability;
use crate::error::SuggestError;
use crate::layout::{Point, SectionLayout};

/// Where the fan would like to sit.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Preference {
    /// Nearest to each section's own focus (its best view).
    #[default]
    BestView,
    /// Nearest to this point, in plan units.
    Point(Point),
    /// Nearest to this seat's position (e.g. the seat just lost to SEAT_TAKEN); the seat
    /// must be in one of the sections searched.
    NearSeat(u64),
}

/// A block of adjacent available seats in one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The section.
    pub section_id: u64,
    /// Row order within the section.
    pub row_index: u32,
    /// Row label.
    pub row_label: String,
    /// Ascending seat ids of adjacent seats, all available.
    pub seat_ids: Vec<u64>,
    /// Lower is better: distance (plan units) from the block's centroid to the
    /// preference, plus the stranding penalty per single seat left behind.
    pub score: f64,
    /// How many single free seats the block would leave stranded (0, 1 or 2).
    pub stranded: u32,
}

struct Candidate {
    section: usize,
    row: usize,
    /// Index into the row's offsets of the window's first seat.
    start: usize,
    distance: f64,
    stranded: u32,
    first_seat_id: u64,
}

/// Best `limit` disjoint blocks of `quantity` adjacent available seats across
/// `sections` (each a layout with its availability), best first; ties go to the lower
/// section id, then the lower seat id. Returns fewer (possibly none) when fewer blocks
/// exist.
///
/// Errors: [`SuggestError::ZeroQuantity`]; [`SuggestError::AvailabilityMismatch`] when
/// an availability covers another range than its layout; [`SuggestError::UnknownSeat`]
/// for a `NearSeat` outside the sections; [`SuggestError::NonFinitePoint`].
pub fn suggest(
    sections: &[(&SectionLayout, &Availability)],
    quantity: u32,
    preference: Preference,
    limit: usize,
) -> Result<Vec<Suggestion>, SuggestError> {
    rank(sections, quantity, preference, limit, Overlap::Disjoint)
}

/// Whether ranked blocks may share seats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// Each block is a real alternative to the others: none shares a seat.
    Disjoint,
    /// The disjoint blocks first (as [`Overlap::Disjoint`]), then every other window,
    /// best first: the order in which to try blocks when some may be gone, so that a
    /// lost block is followed by the next best that does not depend on it.
    DisjointFirst,
}

/// Best `limit` blocks of `quantity` adjacent available seats across `sections`, ranked
/// as [`suggest`] ranks them, with `overlap` deciding whether blocks may share seats.
///
/// Errors: as [`suggest`].
pub fn rank(
    sections: &[(&SectionLayout, &Availability)],
    quantity: u32,
    preference: Preference,
    limit: usize,
    overlap: Overlap,
) -> Result<Vec<Suggestion>, SuggestError> {
    if quantity == 0 {
        return Err(SuggestError::ZeroQuantity);
    }
    for (layout, availability) in sections {
        if layout.first_seat_id() != availability.first_seat_id()
            || layout.seat_count() != availability.seat_count()
        {
            return Err(SuggestError::AvailabilityMismatch {
                section_id: layout.section_id(),
            });
        }
    }
    let fixed_point = match preference {
        Preference::BestView => None,
        Preference::Point(point) => {
            if !(point.x.is_finite() && point.y.is_finite()) {
                return Err(SuggestError::NonFinitePoint);
            }
            Some(point)
        }
        Preference::NearSeat(seat_id) => Some(
            sections
                .iter()
                .find_map(|(layout, _)| layout.seat(seat_id))
                .map(|seat| seat.position)
                .ok_or(SuggestError::UnknownSeat { seat_id })?,
        ),
    };
    let quantity = quantity as usize;
    let mut candidates = Vec::new();
    let mut bounds = Bounds::default();
    if let Some(point) = fixed_point {
        bounds.add(point);
    }
    for (section_index, (layout, availability)) in sections.iter().enumerate() {
        let target = fixed_point.unwrap_or(layout.focus());
        bounds.add(target);
        let seats = layout.seats();
        for (row_index, row) in layout.rows().iter().enumerate() {
            let offsets = row.offsets();
            for seat in offsets {
                bounds.add(seats[*seat as usize].position);
            }
            let mut run_start = 0;
            while run_start < offsets.len() {
                if !availability.is_available_at(offsets[run_start] as usize) {
                    run_start += 1;
                    continue;
                }
                let mut run_end = run_start + 1;
                while run_end < offsets.len()
                    && availability.is_available_at(offsets[run_end] as usize)
                    && seats[offsets[run_end] as usize]
                        .seat_index
                        .checked_sub(seats[offsets[run_end - 1] as usize].seat_index)
                        == Some(1)
                {
                    run_end += 1;
                }
                let run_len = run_end - run_start;
                if run_len >= quantity {
                    for start in run_start..=run_end - quantity {
                        let left = start - run_start;
                        let right = run_end - (start + quantity);
                        let window = &offsets[start..start + quantity];
                        let (sx, sy) = window.iter().fold((0.0, 0.0), |(sx, sy), o| {
                            let p = seats[*o as usize].position;
                            (sx + p.x, sy + p.y)
                        });
                        let centroid = Point {
                            x: sx / quantity as f64,
                            y: sy / quantity as f64,
                        };
                        candidates.push(Candidate {
                            section: section_index,
                            row: row_index,
                            start,
                            distance: centroid.distance(target),
                            stranded: u32::from(left == 1) + u32::from(right == 1),
                            first_seat_id: window
                                .iter()
                                .map(|o| layout.first_seat_id() + u64::from(*o))
                                .min()
                                .unwrap_or(0),
                        });
                    }
                }
                run_start = run_end;
            }
        }
    }
    let penalty = bounds.diagonal() + 1.0;
    let score = |c: &Candidate| c.distance + penalty * f64::from(c.stranded);
    candidates.sort_by(|a, b| {
        score(a)
            .total_cmp(&score(b))
            .then_with(|| {
                sections[a.section]
                    .0
                    .section_id()
                    .cmp(&sections[b.section].0.section_id())
            })
            .then_with(|| a.first_seat_id.cmp(&b.first_seat_id))
    });
    let block = |candidate: &Candidate| {
        let layout = sections[candidate.section].0;
        let row = &layout.rows()[candidate.row];
        let mut seat_ids: Vec<u64> = row.offsets()[candidate.start..candidate.start + quantity]
            .iter()
            .map(|o| layout.first_seat_id() + u64::from(*o))
            .collect();
        seat_ids.sort_unstable();
        Suggestion {
            section_id: layout.section_id(),
            row_index: row.row_index,
            row_label: row.label.clone(),
            seat_ids,
            score: score(candidate),
            stranded: candidate.stranded,
        }
    };
    let mut taken = HashSet::new();
    let mut out = Vec::new();
    let mut overlapping = Vec::new();
    for candidate in &candidates {
        if out.len() >= limit {
            break;
        }
        let suggestion = block(candidate);
        if suggestion.seat_ids.iter().any(|id| taken.contains(id)) {
            if overlap == Overlap::DisjointFirst {
                overlapping.push(suggestion);
            }
            continue;
        }
        taken.extend(suggestion.seat_ids.iter().copied());
        out.push(suggestion);
    }
    let room = limit.saturating_sub(out.len());
    out.extend(overlapping.into_iter().take(room));
    Ok(out)
}

/// Bounding box of every point considered, so the penalty dominates any distance.
#[derive(Default)]
struct Bounds {
    min: Option<Point>,
    max: Option<Point>,
}

impl Bounds {
    fn add(&mut self, p: Point) {
        let min = self.min.get_or_insert(p);
        min.x = min.x.min(p.x);
        min.y = min.y.min(p.y);
        let max = self.max.get_or_insert(p);
        max.x = max.x.max(p.x);
        max.y = max.y.max(p.y);
    }

    fn diagonal(&self) -> f64 {
        match (self.min, self.max) {
            (Some(min), Some(max)) => min.distance(max),
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::SeatPlace;

    /// One row of `n` seats at x = 0..n, y = row, ids from `first`.
    fn rows(first: u64, rows: &[u32]) -> SectionLayout {
        let mut seats = Vec::new();
        let mut id = first;
        for (r, n) in rows.iter().enumerate() {
            for i in 0..*n {
                seats.push(SeatPlace {
                    seat_id: id,
                    row_index: r as u32,
                    row_label: format!("{}", r + 1),
                    seat_index: i,
                    seat_label: format!("{}", i + 1),
                    position: Point {
                        x: f64::from(i),
                        y: r as f64,
                    },
                });
                id += 1;
            }
        }
        SectionLayout::new(1, Point { x: 0.0, y: 0.0 }, seats).unwrap()
    }

    #[test]
    fn nearest_block_to_the_focus_first() {
        let layout = rows(1, &[6, 6]);
        let availability = Availability::all_available(1, 12).unwrap();
        let got = suggest(&[(&layout, &availability)], 2, Preference::BestView, 2).unwrap();
        assert_eq!(got[0].seat_ids, vec![1, 2]);
        assert_eq!(got[0].row_label, "1");
        assert_eq!(got[0].stranded, 0);
        // Disjoint from the first; the front of row 2 is nearer than the rest of row 1.
        assert_eq!(got[1].seat_ids, vec![7, 8]);
    }

    #[test]
    fn avoids_stranding_a_single_seat_when_possible() {
        // Row 0: seats 1..=3 free (a block of 2 there strands one); row 1: 4..=5 free.
        let layout = rows(1, &[3, 2]);
        let availability = Availability::all_available(1, 5).unwrap();
        let got = suggest(&[(&layout, &availability)], 2, Preference::BestView, 3).unwrap();
        assert_eq!(got[0].seat_ids, vec![4, 5]);
        assert_eq!(got[0].stranded, 0);
        assert_eq!(got[1].stranded, 1);
        assert!(got[1].score > got[0].score);
    }

    #[test]
    fn unavailable_seats_and_aisles_break_runs() {
        let mut seats: Vec<SeatPlace> = rows(1, &[5]).seats().to_vec();
        // An aisle between the third and fourth seat.
        seats[3].seat_index = 10;
        seats[4].seat_index = 11;
        let layout = SectionLayout::new(1, Point::default(), seats).unwrap();
        let availability = Availability::from_unavailable(1, 5, [2]).unwrap();
        let got = suggest(&[(&layout, &availability)], 2, Preference::BestView, 5).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].seat_ids, vec![4, 5]);
        assert!(
            suggest(&[(&layout, &availability)], 3, Preference::BestView, 5)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn disjoint_first_then_the_overlapping_windows() {
        let layout = rows(1, &[4]);
        let availability = Availability::all_available(1, 4).unwrap();
        let got = rank(
            &[(&layout, &availability)],
            2,
            Preference::BestView,
            10,
            Overlap::DisjointFirst,
        )
        .unwrap();
        let blocks: Vec<Vec<u64>> = got.into_iter().map(|s| s.seat_ids).collect();
        assert_eq!(blocks, vec![vec![1, 2], vec![3, 4], vec![2, 3]]);
    }

    #[test]
    fn near_seat_and_errors() {
        let layout = rows(1, &[6]);
        let availability = Availability::from_unavailable(1, 6, [6]).unwrap();
        let got = suggest(&[(&layout, &availability)], 1, Preference::NearSeat(6), 1).unwrap();
        assert_eq!(got[0].seat_ids, vec![5]);
        assert_eq!(
            suggest(&[(&layout, &availability)], 1, Preference::NearSeat(60), 1),
            Err(SuggestError::UnknownSeat { seat_id: 60 })
        );
        assert_eq!(
            suggest(&[(&layout, &availability)], 0, Preference::BestView, 1),
            Err(SuggestError::ZeroQuantity)
        );
        let other = Availability::all_available(2, 6).unwrap();
        assert_eq!(
            suggest(&[(&layout, &other)], 1, Preference::BestView, 1),
            Err(SuggestError::AvailabilityMismatch { section_id: 1 })
        );
        assert_eq!(
            suggest(
                &[(&layout, &availability)],
                1,
                Preference::Point(Point {
                    x: f64::NAN,
                    y: 0.0
                }),
                1
            ),
            Err(SuggestError::NonFinitePoint)
        );
    }
}
