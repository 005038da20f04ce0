//! The static geometry of one section: its seats grouped into rows.

use std::collections::BTreeMap;

use crate::error::LayoutError;

/// A position on the plan, in the plan's own units (pretix uses pixels).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Point {
    /// Horizontal coordinate.
    pub x: f64,
    /// Vertical coordinate.
    pub y: f64,
}

impl Point {
    /// Euclidean distance to `other`, in plan units.
    pub fn distance(self, other: Point) -> f64 {
        (self.x - other.x).hypot(self.y - other.y)
    }

    fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite()
    }
}

/// One seat of a section as stored in `catalog.seats`.
#[derive(Debug, Clone, PartialEq)]
pub struct SeatPlace {
    /// Stable id; a section's ids form one contiguous range.
    pub seat_id: u64,
    /// Row order within the section, from 0 (front).
    pub row_index: u32,
    /// Row label shown to fans, e.g. "12" or "K".
    pub row_label: String,
    /// Order within the row. Seats whose indexes differ by exactly 1 are adjacent; a
    /// larger step marks an aisle or gap between them.
    pub seat_index: u32,
    /// Seat label shown to fans.
    pub seat_label: String,
    /// Position on the plan.
    pub position: Point,
}

/// One row: its label and its seats in seat-index order.
#[derive(Debug, Clone, PartialEq)]
pub struct RowLayout {
    /// Row order within the section.
    pub row_index: u32,
    /// Row label shown to fans.
    pub label: String,
    /// Offsets (`seat_id - first_seat_id`) of the row's seats, ascending seat index.
    offsets: Vec<u32>,
}

impl RowLayout {
    /// Offsets (`seat_id - first_seat_id`) of the row's seats in seat-index order.
    pub fn offsets(&self) -> &[u32] {
        &self.offsets
    }
}

/// The seats of one section, validated: ids contiguous and unique, places unique,
/// one label per row, finite positions.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionLayout {
    section_id: u64,
    first_seat_id: u64,
    focus: Point,
    /// Indexed by `seat_id - first_seat_id`.
    seats: Vec<SeatPlace>,
    rows: Vec<RowLayout>,
}

impl SectionLayout {
    /// Builds a section from its seats (any order) and its best-view point.
    ///
    /// Errors: [`LayoutError`] when there are no seats, ids repeat or leave a hole, a
    /// (row index, seat index) place repeats, one row index has two labels, or a
    /// position is not finite.
    pub fn new(
        section_id: u64,
        focus: Point,
        mut seats: Vec<SeatPlace>,
    ) -> Result<Self, LayoutError> {
        if seats.is_empty() {
            return Err(LayoutError::Empty { section_id });
        }
        if u32::try_from(seats.len()).is_err() {
            return Err(LayoutError::TooManySeats { section_id });
        }
        if !focus.is_finite() {
            return Err(LayoutError::NonFinitePosition {
                section_id,
                seat_id: 0,
            });
        }
        seats.sort_by_key(|s| s.seat_id);
        let first_seat_id = seats[0].seat_id;
        for (i, seat) in seats.iter().enumerate() {
            if !seat.position.is_finite() {
                return Err(LayoutError::NonFinitePosition {
                    section_id,
                    seat_id: seat.seat_id,
                });
            }
            let expected = first_seat_id + i as u64;
            if seat.seat_id != expected {
                return Err(if i > 0 && seats[i - 1].seat_id == seat.seat_id {
                    LayoutError::DuplicateSeatId {
                        section_id,
                        seat_id: seat.seat_id,
                    }
                } else {
                    LayoutError::NotContiguous {
                        section_id,
                        missing: expected,
                    }
                });
            }
        }
        let mut by_row: BTreeMap<u32, (String, Vec<(u32, u32)>)> = BTreeMap::new();
        for (offset, seat) in seats.iter().enumerate() {
            let entry = by_row
                .entry(seat.row_index)
                .or_insert_with(|| (seat.row_label.clone(), Vec::new()));
            if entry.0 != seat.row_label {
                return Err(LayoutError::RowLabelMismatch {
                    section_id,
                    row_index: seat.row_index,
                    first: entry.0.clone(),
                    second: seat.row_label.clone(),
                });
            }
            // The length check above makes every offset fit in u32.
            entry.1.push((seat.seat_index, offset as u32));
        }
        let mut rows = Vec::with_capacity(by_row.len());
        for (row_index, (label, mut places)) in by_row {
            places.sort_unstable();
            if let Some(w) = places.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(LayoutError::DuplicatePlace {
                    section_id,
                    row_index,
                    seat_index: w[0].0,
                });
            }
            rows.push(RowLayout {
                row_index,
                label,
                offsets: places.into_iter().map(|p| p.1).collect(),
            });
        }
        Ok(Self {
            section_id,
            first_seat_id,
            focus,
            seats,
            rows,
        })
    }

    /// The section's id.
    pub fn section_id(&self) -> u64 {
        self.section_id
    }

    /// First seat id of the section's contiguous range.
    pub fn first_seat_id(&self) -> u64 {
        self.first_seat_id
    }

    /// Number of seats (the length of the id range).
    pub fn seat_count(&self) -> u32 {
        // `new` refuses sections whose count does not fit.
        self.seats.len() as u32
    }

    /// The section's best-view point: the default preference for suggestions.
    pub fn focus(&self) -> Point {
        self.focus
    }

    /// Seats in ascending seat-id order.
    pub fn seats(&self) -> &[SeatPlace] {
        &self.seats
    }

    /// Rows in ascending row-index order.
    pub fn rows(&self) -> &[RowLayout] {
        &self.rows
    }

    /// Whether `seat_id` belongs to this section.
    pub fn contains(&self, seat_id: u64) -> bool {
        seat_id >= self.first_seat_id && seat_id - self.first_seat_id < self.seats.len() as u64
    }

    /// The seat with this id, if it belongs to the section.
    pub fn seat(&self, seat_id: u64) -> Option<&SeatPlace> {
        if self.contains(seat_id) {
            self.seats.get((seat_id - self.first_seat_id) as usize)
        } else {
            None
        }
    }

    /// Whether `seat_ids` (any order) are distinct seats of one row of this section that
    /// sit next to each other with no aisle or gap between them.
    pub fn is_contiguous_block(&self, seat_ids: &[u64]) -> bool {
        let mut places = Vec::with_capacity(seat_ids.len());
        for &id in seat_ids {
            match self.seat(id) {
                Some(seat) => places.push((seat.row_index, seat.seat_index)),
                None => return false,
            }
        }
        places.sort_unstable();
        !places.is_empty()
            && places
                .windows(2)
                .all(|w| w[0].0 == w[1].0 && w[1].1.checked_sub(w[0].1) == Some(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(seat_id: u64, row: u32, index: u32) -> SeatPlace {
        SeatPlace {
            seat_id,
            row_index: row,
            row_label: format!("R{row}"),
            seat_index: index,
            seat_label: format!("{index}"),
            position: Point {
                x: f64::from(index),
                y: f64::from(row),
            },
        }
    }

    #[test]
    fn rows_group_and_order_seats() {
        let layout = SectionLayout::new(
            7,
            Point::default(),
            vec![
                seat(12, 1, 0),
                seat(10, 0, 1),
                seat(11, 0, 0),
                seat(13, 1, 1),
            ],
        )
        .unwrap();
        assert_eq!(layout.first_seat_id(), 10);
        assert_eq!(layout.seat_count(), 4);
        assert_eq!(layout.rows().len(), 2);
        assert_eq!(layout.rows()[0].offsets(), &[1, 0]);
        assert!(layout.is_contiguous_block(&[10, 11]));
        assert!(!layout.is_contiguous_block(&[10, 12]));
        assert!(!layout.is_contiguous_block(&[10, 10]));
        assert!(!layout.is_contiguous_block(&[99]));
    }

    #[test]
    fn refuses_holes_repeats_and_bad_positions() {
        assert_eq!(
            SectionLayout::new(1, Point::default(), vec![seat(1, 0, 0), seat(3, 0, 1)]),
            Err(LayoutError::NotContiguous {
                section_id: 1,
                missing: 2
            })
        );
        assert_eq!(
            SectionLayout::new(1, Point::default(), vec![seat(1, 0, 0), seat(1, 0, 1)]),
            Err(LayoutError::DuplicateSeatId {
                section_id: 1,
                seat_id: 1
            })
        );
        assert_eq!(
            SectionLayout::new(1, Point::default(), vec![seat(1, 0, 0), seat(2, 0, 0)]),
            Err(LayoutError::DuplicatePlace {
                section_id: 1,
                row_index: 0,
                seat_index: 0
            })
        );
        let mut bad = seat(1, 0, 0);
        bad.position.x = f64::NAN;
        assert!(matches!(
            SectionLayout::new(1, Point::default(), vec![bad]),
            Err(LayoutError::NonFinitePosition { .. })
        ));
        assert_eq!(
            SectionLayout::new(1, Point::default(), vec![]),
            Err(LayoutError::Empty { section_id: 1 })
        );
        let mut relabeled = seat(2, 0, 1);
        relabeled.row_label = "other".into();
        assert!(matches!(
            SectionLayout::new(1, Point::default(), vec![seat(1, 0, 0), relabeled]),
            Err(LayoutError::RowLabelMismatch { .. })
        ));
    }
}
