//! Typed errors of the seating logic; every variant names the offending id or size.

use thiserror::Error;

/// Why a set of seats does not form a valid [`crate::SectionLayout`].
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LayoutError {
    /// The section has no seats.
    #[error("section {section_id} has no seats")]
    Empty {
        /// The section.
        section_id: u64,
    },
    /// Two seats share a seat id.
    #[error("section {section_id}: seat id {seat_id} appears twice")]
    DuplicateSeatId {
        /// The section.
        section_id: u64,
        /// The repeated id.
        seat_id: u64,
    },
    /// The seat ids leave a hole, so they are not one contiguous range.
    #[error("section {section_id}: seat ids are not contiguous (seat id {missing} is missing)")]
    NotContiguous {
        /// The section.
        section_id: u64,
        /// The first id missing from the range.
        missing: u64,
    },
    /// Two seats share a (row index, seat index) place.
    #[error("section {section_id}: row {row_index} seat index {seat_index} appears twice")]
    DuplicatePlace {
        /// The section.
        section_id: u64,
        /// Row index of the repeated place.
        row_index: u32,
        /// Seat index of the repeated place.
        seat_index: u32,
    },
    /// Seats of one row index carry different row labels.
    #[error("section {section_id}: row {row_index} has labels {first:?} and {second:?}")]
    RowLabelMismatch {
        /// The section.
        section_id: u64,
        /// The row index.
        row_index: u32,
        /// One label seen.
        first: String,
        /// Another label seen.
        second: String,
    },
    /// A coordinate (seat position or focus) is NaN or infinite.
    #[error("section {section_id}: seat {seat_id} has a non-finite position")]
    NonFinitePosition {
        /// The section.
        section_id: u64,
        /// The seat, or 0 for the section's focus.
        seat_id: u64,
    },
    /// The section holds more seats than a `u32` count can express.
    #[error("section {section_id} has more than {max} seats", max = u32::MAX)]
    TooManySeats {
        /// The section.
        section_id: u64,
    },
    /// A stored id or index is negative (see [`crate::sections_from_stored`]).
    #[error("{what} {value}")]
    Negative {
        /// Which: `seat id`, `row index`, `seat index` or `section id`.
        what: &'static str,
        /// Its stored value.
        value: i64,
    },
}

/// Why an availability bitmap was refused or could not be updated.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AvailabilityError {
    /// The bitmap's length is not `ceil(seat_count / 8)` bytes.
    #[error("bitmap has {actual} bytes, {seat_count} seats need {expected}")]
    WrongLength {
        /// Seats the bitmap covers.
        seat_count: u32,
        /// Bytes expected.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// Bits past the last seat are set.
    #[error("bitmap sets bits past seat {seat_count}")]
    TrailingBits {
        /// Seats the bitmap covers.
        seat_count: u32,
    },
    /// A seat id outside `[first_seat_id, first_seat_id + seat_count)`.
    #[error("seat id {seat_id} is outside [{first_seat_id}, {first_seat_id} + {seat_count})")]
    OutOfRange {
        /// The seat id.
        seat_id: u64,
        /// First id of the range.
        first_seat_id: u64,
        /// Seats in the range.
        seat_count: u32,
    },
    /// `first_seat_id + seat_count` overflows `u64`.
    #[error("seat range starting at {first_seat_id} overflows")]
    RangeOverflow {
        /// First id of the range.
        first_seat_id: u64,
    },
}

/// Why suggestions could not be computed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SuggestError {
    /// Quantity 0 was asked for.
    #[error("quantity must be at least 1")]
    ZeroQuantity,
    /// The availability given for a section covers another seat range than its layout.
    #[error("section {section_id}: availability covers another seat range than the layout")]
    AvailabilityMismatch {
        /// The section.
        section_id: u64,
    },
    /// `Preference::NearSeat` names a seat that is in none of the given sections.
    #[error("seat {seat_id} is not in the sections searched")]
    UnknownSeat {
        /// The seat.
        seat_id: u64,
    },
    /// `Preference::Point` is NaN or infinite.
    #[error("the preferred point is not finite")]
    NonFinitePoint,
}
