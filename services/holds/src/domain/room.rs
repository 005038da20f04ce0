//! What a section has room for: its free seats and the longest run of them side by side
//! in one row, over all its seats and per price category. Best available reads it (at
//! most a second old) to choose where a request may fit before claiming, and to name the
//! sections where a refused request would fit.

use std::collections::BTreeMap;

use stadium_seating::{Availability, SectionLayout};

use super::SectionId;

/// What one section, or one price category of it, has room for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// The section.
    pub section: SectionId,
    /// The price category counted; `None`: every seat of the section.
    pub category: Option<String>,
    /// Free seats.
    pub free: u32,
    /// The most free seats side by side in one row (no aisle or gap between them), at
    /// most the event's per-claim limit.
    pub together: u32,
}

impl Room {
    /// Whether a request for `quantity` seats fits here: side by side when `together`,
    /// else any that many seats.
    pub fn fits(&self, quantity: u32, together: bool) -> bool {
        if together {
            self.together >= quantity
        } else {
            self.free >= quantity
        }
    }
}

/// The room of `section` (laid out as `layout`, each seat's price category in
/// `categories` by offset) under `availability`: first over all its seats, then one per
/// category, in code order. Runs are capped at `cap` seats. One pass over the seats.
pub fn section_rooms(
    section: SectionId,
    layout: &SectionLayout,
    categories: &[String],
    availability: &Availability,
    cap: u32,
) -> Vec<Room> {
    let places = layout.seats();
    // (free, longest run) over all seats, and per category.
    let mut all = (0u32, 0u32);
    let mut by_category: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    for row in layout.rows() {
        let mut run = 0u32;
        let mut category_run = 0u32;
        let mut previous: Option<(u32, &str)> = None;
        for &offset in row.offsets() {
            let index = offset as usize;
            let category = categories.get(index).map_or("", String::as_str);
            let seat_index = places.get(index).map_or(0, |p| p.seat_index);
            let next_to_previous = previous.is_some_and(|(p, _)| seat_index == p + 1);
            if availability.is_available_at(index) {
                run = if next_to_previous { run + 1 } else { 1 };
                category_run = match previous {
                    Some((_, c)) if next_to_previous && c == category => category_run + 1,
                    _ => 1,
                };
                all = (all.0 + 1, all.1.max(run));
                let entry = by_category.entry(category).or_default();
                *entry = (entry.0 + 1, entry.1.max(category_run));
            } else {
                run = 0;
                category_run = 0;
            }
            // A taken seat breaks both runs: the next free seat starts afresh.
            previous = Some((seat_index, category)).filter(|_| run > 0);
        }
    }
    let room = |category: Option<String>, (free, together): (u32, u32)| Room {
        section,
        category,
        free,
        together: together.min(cap),
    };
    let mut rooms = vec![room(None, all)];
    rooms.extend(
        by_category
            .into_iter()
            .filter(|(code, _)| !code.is_empty())
            .map(|(code, counts)| room(Some(code.to_owned()), counts)),
    );
    rooms
}

#[cfg(test)]
mod tests {
    use stadium_seating::{Point, SeatPlace};

    use super::*;

    /// One row of `categories.len()` seats (ids 1.., a gap after the fourth), one section.
    fn row(categories: &[&str]) -> (SectionLayout, Vec<String>) {
        let seats = (0..categories.len())
            .map(|i| {
                let index = i as u32 + u32::from(i >= 4);
                SeatPlace {
                    seat_id: i as u64 + 1,
                    row_index: 0,
                    row_label: "A".into(),
                    seat_index: index,
                    seat_label: index.to_string(),
                    position: Point {
                        x: f64::from(index),
                        y: 0.0,
                    },
                }
            })
            .collect();
        let layout = SectionLayout::new(7, Point { x: 0.0, y: 0.0 }, seats).unwrap();
        (layout, categories.iter().map(|c| (*c).to_owned()).collect())
    }

    fn free(count: u32, taken: &[u64]) -> Availability {
        let mut availability = Availability::all_available(1, count).unwrap();
        for &seat in taken {
            availability.set(seat, false).unwrap();
        }
        availability
    }

    fn summary(rooms: &[Room]) -> Vec<(Option<&str>, u32, u32)> {
        rooms
            .iter()
            .map(|r| (r.category.as_deref(), r.free, r.together))
            .collect()
    }

    #[test]
    fn runs_break_at_taken_seats_gaps_and_category_changes() {
        // Seats 1-4, a gap, 5-7; categories change after the second seat.
        let (layout, categories) = row(&["b", "b", "a", "a", "a", "a", "a"]);
        let section = SectionId::try_from(7u64).unwrap();
        let rooms = section_rooms(section, &layout, &categories, &free(7, &[]), 8);
        assert_eq!(
            summary(&rooms),
            vec![(None, 7, 4), (Some("a"), 5, 3), (Some("b"), 2, 2)]
        );
        let rooms = section_rooms(section, &layout, &categories, &free(7, &[2, 6]), 8);
        assert_eq!(
            summary(&rooms),
            vec![(None, 5, 2), (Some("a"), 4, 2), (Some("b"), 1, 1)]
        );
        let capped = section_rooms(section, &layout, &categories, &free(7, &[]), 3);
        assert_eq!(capped[0].together, 3);
        assert!(capped[0].fits(3, true) && !capped[0].fits(4, true) && capped[0].fits(7, false));
    }

    #[test]
    fn a_full_section_has_no_room_and_no_category_rooms() {
        let (layout, categories) = row(&["a", "a"]);
        let section = SectionId::try_from(7u64).unwrap();
        let rooms = section_rooms(section, &layout, &categories, &free(2, &[1, 2]), 8);
        assert_eq!(summary(&rooms), vec![(None, 0, 0)]);
        assert!(!rooms[0].fits(1, false));
    }
}
