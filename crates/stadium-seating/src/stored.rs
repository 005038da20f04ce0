//! Sections read back from the catalog. PostgreSQL has no unsigned integers: ids are
//! `bigint` and row and seat indexes `integer` there, and a negative one is a row the
//! seating logic cannot read.

use std::collections::HashMap;

use crate::error::LayoutError;
use crate::layout::{Point, SeatPlace, SectionLayout};

/// A section as `catalog.event_sections` publishes it, in its column types: what
/// [`sections_from_stored`] needs of it.
#[derive(Debug, Clone, Copy)]
pub struct StoredSection {
    /// The section's id.
    pub section_id: i64,
    /// Horizontal position of the section's best-view point.
    pub focus_x: f64,
    /// Vertical position of the section's best-view point.
    pub focus_y: f64,
}

/// One seat as `catalog.event_seats` publishes it, in its column types.
#[derive(Debug, Clone)]
pub struct StoredSeat {
    /// The seat's section.
    pub section_id: i64,
    /// The seat's id.
    pub seat_id: i64,
    /// Row order within the section, from 0 (front).
    pub row_index: i32,
    /// Order within the row.
    pub seat_index: i32,
    /// Row label shown to fans.
    pub row_label: String,
    /// Seat label shown to fans.
    pub seat_label: String,
    /// Horizontal position on the plan.
    pub x: f64,
    /// Vertical position on the plan.
    pub y: f64,
    /// The seat's price category.
    pub category_code: String,
}

/// The layout of each of `sections` (in the order given) from `seats` (ascending by seat id; those of other sections are ignored),
/// with the category codes of its seats in seat id order, which is the offset order of
/// its layout.
///
/// Errors: [`LayoutError::Negative`] naming the first negative seat id, row or seat
/// index, or section id; as [`SectionLayout::new`]; both for the first section in
/// order that has one.
pub fn sections_from_stored(
    sections: impl IntoIterator<Item = StoredSection>,
    seats: Vec<StoredSeat>,
) -> Result<Vec<(SectionLayout, Vec<String>)>, LayoutError> {
    let mut by_section: HashMap<i64, Vec<StoredSeat>> = HashMap::new();
    for seat in seats {
        by_section.entry(seat.section_id).or_default().push(seat);
    }
    sections
        .into_iter()
        .map(|section| {
            let seats = by_section.remove(&section.section_id).unwrap_or_default();
            let categories = seats.iter().map(|s| s.category_code.clone()).collect();
            let places = seats
                .into_iter()
                .map(place)
                .collect::<Result<Vec<_>, _>>()?;
            let focus = Point {
                x: section.focus_x,
                y: section.focus_y,
            };
            let section_id = unsigned("section id", section.section_id)?;
            let layout = SectionLayout::new(section_id, focus, places)?;
            Ok((layout, categories))
        })
        .collect()
}

/// The place of a stored seat.
fn place(seat: StoredSeat) -> Result<SeatPlace, LayoutError> {
    Ok(SeatPlace {
        seat_id: unsigned("seat id", seat.seat_id)?,
        row_index: unsigned("row index", seat.row_index)?,
        row_label: seat.row_label,
        seat_index: unsigned("seat index", seat.seat_index)?,
        seat_label: seat.seat_label,
        position: Point {
            x: seat.x,
            y: seat.y,
        },
    })
}

/// `value` as the unsigned type `U`, or [`LayoutError::Negative`] naming it `what`.
fn unsigned<S, U>(what: &'static str, value: S) -> Result<U, LayoutError>
where
    S: Copy + Into<i64>,
    U: TryFrom<S>,
{
    U::try_from(value).map_err(|_| LayoutError::Negative {
        what,
        value: value.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(section_id: i64, seat_id: i64, row_index: i32, seat_index: i32) -> StoredSeat {
        StoredSeat {
            section_id,
            seat_id,
            row_index,
            seat_index,
            row_label: row_index.to_string(),
            seat_label: seat_index.to_string(),
            x: f64::from(seat_index),
            y: f64::from(row_index),
            category_code: format!("c{seat_id}"),
        }
    }

    fn section(section_id: i64) -> StoredSection {
        StoredSection {
            section_id,
            focus_x: 0.0,
            focus_y: 0.0,
        }
    }

    #[test]
    fn sections_in_order_with_their_categories() {
        let seats = vec![
            seat(2, 1, 0, 0),
            seat(1, 5, 0, 0),
            seat(2, 2, 0, 1),
            seat(9, 8, 0, 0),
        ];
        let laid_out = sections_from_stored([1, 2, 3].map(section), seats);
        assert_eq!(laid_out.unwrap_err(), LayoutError::Empty { section_id: 3 });
        let seats = vec![seat(2, 1, 0, 0), seat(1, 5, 0, 0), seat(2, 2, 0, 1)];
        let laid_out = sections_from_stored([2, 1].map(section), seats).unwrap();
        let ids: Vec<u64> = laid_out.iter().map(|(l, _)| l.section_id()).collect();
        assert_eq!(ids, [2, 1]);
        assert_eq!(laid_out[0].1, ["c1", "c2"]);
        assert_eq!(laid_out[1].1, ["c5"]);
    }

    #[test]
    fn a_negative_id_or_index_is_named() {
        for (seats, id, message) in [
            (vec![seat(1, -7, 0, 0)], 1, "seat id -7"),
            (vec![seat(1, 7, -1, 0)], 1, "row index -1"),
            (vec![seat(1, 7, 0, -2)], 1, "seat index -2"),
            (vec![seat(-3, 7, 0, 0)], -3, "section id -3"),
        ] {
            let refused = sections_from_stored([section(id)], seats).unwrap_err();
            assert_eq!(refused.to_string(), message);
        }
    }
}
