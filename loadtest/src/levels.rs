//! Which price levels of a section have room, as a fan reads them off the seat map: the
//! longest run of free seats side by side in a row, per price category, from the
//! availability bitmap. A fan pressing "best available" asks for a price level the map
//! shows free seats for, not one that is gone.

use std::collections::HashMap;

use stadium_proto::seat_map::v1::Section;

/// A section's seats row by row, each with its price level.
#[derive(Debug, Clone)]
pub(crate) struct SectionSeats {
    /// Per row, in seat order: (offset from the section's first seat id, price level: the index of its
    /// category in the layout, `None` when unknown).
    rows: Vec<Vec<(usize, Option<usize>)>>,
}

impl SectionSeats {
    /// The seats of `section`, each category code ranked by `levels`.
    pub fn new(section: &Section, levels: &HashMap<&str, usize>) -> Self {
        let first_seat_id = section.first_seat_id;
        let rows = section
            .rows
            .iter()
            .map(|row| {
                row.seats
                    .iter()
                    .filter_map(|seat| {
                        let offset =
                            usize::try_from(seat.seat_id.checked_sub(first_seat_id)?).ok()?;
                        Some((offset, levels.get(seat.category_code.as_str()).copied()))
                    })
                    .collect()
            })
            .collect();
        Self { rows }
    }

    /// The longest run of free seats next to each other in one row, per price level
    /// (`levels` long), under `bitmap` (bit i, LSB first in each byte, set when seat
    /// `first_seat_id + i` is free; `None`: every seat free).
    pub fn runs(&self, bitmap: Option<&[u8]>, levels: usize) -> Vec<u32> {
        let free = |offset: usize| {
            bitmap.is_none_or(|b| {
                b.get(offset / 8)
                    .is_some_and(|byte| byte >> (offset % 8) & 1 == 1)
            })
        };
        let mut longest = vec![0u32; levels];
        for row in &self.rows {
            let mut run = 0u32;
            let mut previous: Option<usize> = None;
            for &(offset, level) in row {
                let Some(level) = level.filter(|l| *l < levels) else {
                    run = 0;
                    previous = None;
                    continue;
                };
                if !free(offset) {
                    run = 0;
                    previous = None;
                    continue;
                }
                run = if previous == Some(level) { run + 1 } else { 1 };
                previous = Some(level);
                longest[level] = longest[level].max(run);
            }
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use stadium_proto::seat_map::v1::{Row, Seat};

    use super::*;

    fn section(rows: &[&[&str]]) -> Section {
        let mut id = 100;
        Section {
            first_seat_id: 100,
            rows: rows
                .iter()
                .map(|codes| Row {
                    seats: codes
                        .iter()
                        .map(|code| {
                            id += 1;
                            Seat {
                                seat_id: id - 1,
                                category_code: (*code).to_owned(),
                                ..Seat::default()
                            }
                        })
                        .collect(),
                    ..Row::default()
                })
                .collect(),
            ..Section::default()
        }
    }

    #[test]
    fn runs_count_free_seats_side_by_side_of_one_level() {
        let levels: HashMap<&str, usize> = [("a", 0), ("b", 1)].into_iter().collect();
        let seats = SectionSeats::new(
            &section(&[&["a", "a", "b", "b", "b"], &["a", "x"]]),
            &levels,
        );
        assert_eq!(seats.runs(None, 2), vec![2, 3]);
        // Seats 101 and 104 taken: a has single seats left, b a pair.
        let bitmap = [0b1110_1101u8];
        assert_eq!(seats.runs(Some(&bitmap), 2), vec![1, 2]);
        assert_eq!(seats.runs(Some(&[0u8, 0u8]), 2), vec![0, 0]);
    }
}
