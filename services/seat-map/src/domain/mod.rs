//! The seat map's domain: event ids, an event's layout (sections as
//! [`stadium_seating::SectionLayout`]s with their categories) and availability
//! snapshots. No wire or database types.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use stadium_seating::{Availability, SectionLayout};

/// An event id: a decimal `bigint` in `1..=i64::MAX` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(i64);

impl EventId {
    /// The id as stored (`bigint`, positive).
    pub fn get(self) -> i64 {
        self.0
    }
}

impl TryFrom<&str> for EventId {
    type Error = String;

    /// Parses the wire form; the error says what is wrong.
    fn try_from(raw: &str) -> Result<Self, String> {
        match raw.trim().parse::<i64>() {
            Ok(id) if id > 0 => Ok(Self(id)),
            _ if raw.trim().is_empty() => Err("must not be empty".into()),
            _ => Err(format!(
                "must be a decimal integer between 1 and {}",
                i64::MAX
            )),
        }
    }
}

/// One section of an event's venue.
#[derive(Debug, Clone)]
pub struct SectionInfo {
    /// Short code from the plan.
    pub code: String,
    /// Display name.
    pub name: String,
    /// Geometry; seat ids contiguous.
    pub layout: SectionLayout,
    /// Category code of each seat, indexed by `seat_id - first_seat_id`.
    pub categories: Vec<String>,
    /// Offsets (`seat_id - first_seat_id`) of the accessible seats, ascending.
    pub accessible: Vec<u32>,
}

impl SectionInfo {
    /// The section id.
    pub fn section_id(&self) -> u64 {
        self.layout.section_id()
    }

    /// Whether the seat at `offset` (`seat_id - first_seat_id`) is accessible.
    pub fn is_accessible(&self, offset: u32) -> bool {
        self.accessible.binary_search(&offset).is_ok()
    }
}

/// A category as the event shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryInfo {
    /// Code seats refer to.
    pub code: String,
    /// Display name.
    pub name: String,
    /// Display colour, `#rrggbb`.
    pub color: String,
    /// Price in minor units of `currency`, when the box office has set one.
    pub price_minor: Option<i64>,
    /// ISO 4217 code.
    pub currency: String,
}

/// The static layout of one event's venue.
#[derive(Debug, Clone)]
pub struct EventLayout {
    /// The event.
    pub event_id: EventId,
    /// Its venue.
    pub venue_id: i64,
    /// The venue's name.
    pub venue_name: String,
    /// Sections in plan order.
    pub sections: Vec<SectionInfo>,
    /// Categories in plan order.
    pub categories: Vec<CategoryInfo>,
    /// Most seats one claim may take (bounds `SuggestSeats.quantity`).
    pub max_seats_per_claim: u32,
    /// Changes whenever the layout, the event or its prices change.
    pub version: String,
}

impl EventLayout {
    /// The section with this id.
    pub fn section(&self, section_id: u64) -> Option<&SectionInfo> {
        self.sections.iter().find(|s| s.section_id() == section_id)
    }

    /// The section holding this seat.
    pub fn section_of_seat(&self, seat_id: u64) -> Option<&SectionInfo> {
        self.sections.iter().find(|s| s.layout.contains(seat_id))
    }
}

/// Availability of one section as read from the database at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Which seats were free.
    pub availability: Availability,
    /// The database clock when the read's transaction started (the view is at least
    /// this new).
    pub as_of: SystemTime,
    /// The local clock just before the read began; ages are measured from here, so a
    /// reported age never understates.
    pub loaded_at: Instant,
}

/// A snapshot shared between the cache and the requests it answers.
pub type SharedSnapshot = Arc<Snapshot>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_parse_or_say_why() {
        assert_eq!(EventId::try_from("42").unwrap().get(), 42);
        assert_eq!(EventId::try_from(" 7 ").unwrap().get(), 7);
        assert!(EventId::try_from("").unwrap_err().contains("empty"));
        for bad in ["0", "-3", "x", "99999999999999999999"] {
            assert!(EventId::try_from(bad).is_err(), "{bad}");
        }
    }
}
