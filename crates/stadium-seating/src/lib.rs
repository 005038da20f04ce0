//! Seating logic shared by the seat map, holds and the box office, with no IO.
//!
//! - [`SectionLayout`]: the seats of one section (id, row, index, position), whose seat
//!   ids form one contiguous range `[first_seat_id, first_seat_id + seat_count)`; read
//!   back from the catalog by [`sections_from_stored`].
//! - [`Availability`]: a bitmap over that range, bit `i` (LSB first within each byte)
//!   set when seat `first_seat_id + i` is free, exactly as `SectionAvailability` in the
//!   seat-map contract encodes it.
//! - [`suggest`]: best available seats: contiguous in one row, stranding no single seat
//!   where avoidable, nearest to a preferred point.

mod availability;
mod error;
mod layout;
mod stored;
mod suggest;

pub use availability::Availability;
pub use error::{AvailabilityError, LayoutError, SuggestError};
pub use layout::{Point, RowLayout, SeatPlace, SectionLayout};
pub use stored::{StoredSeat, StoredSection, sections_from_stored};
pub use suggest::{Overlap, Preference, Suggestion, rank, suggest};
