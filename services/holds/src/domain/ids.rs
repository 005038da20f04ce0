//! Identifier newtypes, each built from its wire form with `TryFrom` so a bad value is
//! refused at the gRPC edge and never reaches SQL.

use std::fmt;

/// Why a wire value is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Empty string or zero.
    #[error("must not be empty or zero")]
    Empty,
    /// Not a decimal integer in `1..=i64::MAX`.
    #[error("must be a decimal integer between 1 and {}", i64::MAX)]
    NotAnId,
    /// Not a UUID.
    #[error("must be a UUID")]
    NotAUuid,
    /// Longer than allowed.
    #[error("must be at most {0} characters")]
    TooLong(usize),
    /// A character outside visible ASCII (`!` to `~`).
    #[error("must be visible ASCII characters (! to ~) only")]
    NotVisibleAscii,
}

fn positive(raw: u64) -> Result<i64, IdError> {
    match raw {
        0 => Err(IdError::Empty),
        n => i64::try_from(n).map_err(|_| IdError::NotAnId),
    }
}

macro_rules! int_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(i64);

        impl $name {
            /// The id as stored in PostgreSQL (`bigint`, always positive).
            pub fn get(self) -> i64 {
                self.0
            }

            /// The id on the wire (`uint64`).
            pub fn wire(self) -> u64 {
                // Positive by construction, so the conversion cannot lose anything.
                self.0.unsigned_abs()
            }
        }

        impl TryFrom<u64> for $name {
            type Error = IdError;

            fn try_from(raw: u64) -> Result<Self, IdError> {
                positive(raw).map(Self)
            }
        }

        impl TryFrom<i64> for $name {
            type Error = IdError;

            fn try_from(raw: i64) -> Result<Self, IdError> {
                u64::try_from(raw).map_err(|_| IdError::NotAnId).and_then(Self::try_from)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

int_id!(
    /// A seat (`catalog.seats.seat_id`); ascending seat id is the claiming order.
    SeatId
);
int_id!(
    /// A section of a venue (`catalog.sections.section_id`).
    SectionId
);
int_id!(
    /// An event (`catalog.events.event_id`); travels as a decimal string on the wire.
    EventId
);

impl TryFrom<&str> for EventId {
    type Error = IdError;

    /// Parses the wire form: a decimal integer in `1..=i64::MAX`, no sign, blanks or
    /// leading zeros, so one event has one spelling (as the waiting room requires).
    fn try_from(raw: &str) -> Result<Self, IdError> {
        if raw.is_empty() {
            return Err(IdError::Empty);
        }
        if raw.starts_with('0') || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(IdError::NotAnId);
        }
        raw.parse::<u64>()
            .map_err(|_| IdError::NotAnId)
            .and_then(Self::try_from)
    }
}

/// The key of a hold (a UUID): names the hold to its owner and is the payment's
/// idempotency key.
///
/// Keys made by this version are version 8 UUIDs (RFC 9562 §5.8) that carry the
/// hold's route, so a hold is found on its shard without asking every shard: the 60
/// bits of `custom_a`/`custom_b` are random or a request's hash (the key's *family*),
/// then 2 zero bits, the event id (30 bits) and the section id (the last 32 bits,
/// bytes 12–15). The keys of one family differ only in their last 32 bits, so they are
/// one range in UUID order (PostgreSQL compares UUIDs bytewise): a claim finds a hold
/// of its request in any section with one index probe (`holds.hold_key_family_*`,
/// migration `20261210000001`). Ids too large to carry, and keys of earlier versions,
/// carry no route ([`HoldKey::route`] is `None`): those holds are on the main database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HoldKey(uuid::Uuid);

/// Largest event id a key carries (30 bits).
const ROUTE_EVENT_MAX: i64 = (1 << 30) - 1;
/// Largest section id a key carries (32 bits).
const ROUTE_SECTION_MAX: i64 = u32::MAX as i64;

impl HoldKey {
    /// A fresh random key of a hold of `section` of `event`.
    pub fn generate(event: EventId, section: SectionId) -> Self {
        Self::stamped(*uuid::Uuid::new_v4().as_bytes(), event, section)
    }

    /// The key of the hold a fan's claim with a request id makes in `section`: its
    /// family is the first 60 bits of SHA-256 over the event, the fan and the request
    /// id (length-prefixed). A retry of the claim derives the same key, and a claim of
    /// the same request in another section a key of the same family, so the database
    /// finds the hold the request already made (migrations `20261203020000`,
    /// `20261210000001`).
    pub fn for_request(
        event: EventId,
        fan: &FanId,
        request: &RequestId,
        section: SectionId,
    ) -> Self {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(b"stadium hold key v1\0");
        hash.update(event.get().to_be_bytes());
        for part in [fan.as_str(), request.as_str()] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        let digest = hash.finalize();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        Self::stamped(bytes, event, section)
    }

    /// A key of the family of the holds `fan`'s claims with `request` make in `event`,
    /// whatever their section: what a probe for the request's holds looks for.
    pub fn request_family(event: EventId, fan: &FanId, request: &RequestId) -> Self {
        Self::for_request(event, fan, request, SectionId(1))
    }

    /// `family`'s first 60 bits with the route of (`event`, `section`) after them,
    /// as a version 8 UUID; no route (zeros) when an id is too large to carry.
    fn stamped(family: [u8; 16], event: EventId, section: SectionId) -> Self {
        let mut bytes = family;
        let (event, section) = match (event.get(), section.get()) {
            (e, s) if e <= ROUTE_EVENT_MAX && s <= ROUTE_SECTION_MAX => (e, s),
            _ => (0, 0),
        };
        // The variant's 2 bits and 2 zero bits, then the event's top 4 bits.
        bytes[8] = ((event >> 24) & 0x3f) as u8;
        bytes[9..12].copy_from_slice(&(event as u32).to_be_bytes()[1..]);
        bytes[12..16].copy_from_slice(&(section as u32).to_be_bytes());
        Self(uuid::Builder::from_custom_bytes(bytes).into_uuid())
    }

    /// The (event, section) whose shard holds this hold, when the key carries it.
    pub fn route(self) -> Option<(EventId, SectionId)> {
        if self.0.get_version_num() != 8 {
            return None;
        }
        let bytes = self.0.as_bytes();
        let event = i64::from(bytes[8] & 0x3f) << 24
            | i64::from(u32::from_be_bytes([0, bytes[9], bytes[10], bytes[11]]));
        let section = i64::from(u32::from_be_bytes([
            bytes[12], bytes[13], bytes[14], bytes[15],
        ]));
        Some((
            EventId::try_from(event).ok()?,
            SectionId::try_from(section).ok()?,
        ))
    }

    /// The UUID.
    pub fn uuid(self) -> uuid::Uuid {
        self.0
    }
}

impl From<uuid::Uuid> for HoldKey {
    fn from(u: uuid::Uuid) -> Self {
        Self(u)
    }
}

impl TryFrom<&str> for HoldKey {
    type Error = IdError;

    /// Parses the wire form, a UUID in any of its usual spellings.
    fn try_from(raw: &str) -> Result<Self, IdError> {
        if raw.is_empty() {
            return Err(IdError::Empty);
        }
        uuid::Uuid::parse_str(raw)
            .map(Self)
            .map_err(|_| IdError::NotAUuid)
    }
}

impl fmt::Display for HoldKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A fan: the `sub` of a verified fan session, 1..=200 characters (the column's check).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FanId(String);

impl FanId {
    /// Longest fan id, in characters.
    pub const MAX_LEN: usize = 200;

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for FanId {
    type Error = IdError;

    fn try_from(raw: &str) -> Result<Self, IdError> {
        match raw.chars().count() {
            0 => Err(IdError::Empty),
            n if n > Self::MAX_LEN => Err(IdError::TooLong(Self::MAX_LEN)),
            _ => Ok(Self(raw.to_owned())),
        }
    }
}

impl fmt::Display for FanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A client's id for one claim (`request_id` of ClaimSeats and ClaimBestAvailable):
/// 1 to 255 visible ASCII characters, as Stripe's idempotency keys (at most 255
/// characters). The client makes one per claim it means, and sends it again with a
/// retry of that claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    /// Longest request id, in characters.
    pub const MAX_LEN: usize = 255;

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for RequestId {
    type Error = IdError;

    fn try_from(raw: &str) -> Result<Self, IdError> {
        if raw.is_empty() {
            return Err(IdError::Empty);
        }
        if raw.len() > Self::MAX_LEN {
            return Err(IdError::TooLong(Self::MAX_LEN));
        }
        if !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(IdError::NotVisibleAscii);
        }
        Ok(Self(raw.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_positive_decimals() {
        assert_eq!(EventId::try_from("42").unwrap().get(), 42);
        for bad in [
            "",
            "-1",
            "+1",
            " 1",
            "0",
            "01",
            "1e3",
            "9223372036854775808",
            "abc",
        ] {
            assert!(EventId::try_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn numeric_ids_refuse_zero_and_overflow() {
        assert_eq!(SeatId::try_from(0u64), Err(IdError::Empty));
        assert_eq!(SeatId::try_from(u64::MAX), Err(IdError::NotAnId));
        assert_eq!(SectionId::try_from(-3i64), Err(IdError::NotAnId));
        assert_eq!(SeatId::try_from(9u64).unwrap().wire(), 9);
    }

    #[test]
    fn hold_keys_and_fans() {
        let (event, section) = (
            EventId::try_from(7u64).unwrap(),
            SectionId::try_from(9u64).unwrap(),
        );
        let key = HoldKey::generate(event, section);
        assert_eq!(HoldKey::try_from(key.to_string().as_str()), Ok(key));
        assert_eq!(HoldKey::try_from("nope"), Err(IdError::NotAUuid));
        assert_eq!(FanId::try_from(""), Err(IdError::Empty));
        assert!(FanId::try_from("x".repeat(201).as_str()).is_err());
    }

    #[test]
    fn request_ids_are_visible_ascii_up_to_255() {
        assert!(RequestId::try_from("x".repeat(255).as_str()).is_ok());
        assert_eq!(
            RequestId::try_from("x".repeat(256).as_str()),
            Err(IdError::TooLong(255))
        );
        assert_eq!(RequestId::try_from(""), Err(IdError::Empty));
        for bad in ["a b", "a\nb", "é", "a\0"] {
            assert_eq!(
                RequestId::try_from(bad),
                Err(IdError::NotVisibleAscii),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_request_id_derives_one_key_per_event_and_fan() {
        let event = EventId::try_from(7u64).unwrap();
        let other_event = EventId::try_from(8u64).unwrap();
        let section = SectionId::try_from(3u64).unwrap();
        let fan = FanId::try_from("fan-1").unwrap();
        let request = RequestId::try_from("r-1").unwrap();
        let family = |key: HoldKey| key.uuid().as_bytes()[..12].to_vec();
        let key = HoldKey::for_request(event, &fan, &request, section);
        assert_eq!(key, HoldKey::for_request(event, &fan, &request, section));
        assert_eq!(key.uuid().get_version_num(), 8);
        assert_ne!(
            family(key),
            family(HoldKey::for_request(other_event, &fan, &request, section))
        );
        // The parts are length-prefixed: moving a character across them changes the key.
        let shifted = HoldKey::for_request(
            event,
            &FanId::try_from("fan-1r").unwrap(),
            &RequestId::try_from("-1").unwrap(),
            section,
        );
        assert_ne!(family(key), family(shifted));
    }

    #[test]
    fn keys_carry_their_route_and_a_request_keeps_its_family() {
        let event = EventId::try_from(ROUTE_EVENT_MAX).unwrap();
        let (one, two) = (
            SectionId::try_from(ROUTE_SECTION_MAX).unwrap(),
            SectionId::try_from(1u64).unwrap(),
        );
        let key = HoldKey::generate(event, one);
        assert_eq!(key.uuid().get_version_num(), 8);
        assert_eq!(key.route(), Some((event, one)));

        let fan = FanId::try_from("fan-1").unwrap();
        let request = RequestId::try_from("r-1").unwrap();
        let (a, b) = (
            HoldKey::for_request(event, &fan, &request, one),
            HoldKey::for_request(event, &fan, &request, two),
        );
        assert_eq!(a, HoldKey::for_request(event, &fan, &request, one));
        assert_ne!(a, b);
        assert_eq!(b.route(), Some((event, two)));
        // One family: the same first 12 bytes, so one range in UUID order.
        assert_eq!(a.uuid().as_bytes()[..12], b.uuid().as_bytes()[..12]);
        let other = HoldKey::for_request(event, &fan, &RequestId::try_from("r-2").unwrap(), one);
        assert_ne!(a.uuid().as_bytes()[..12], other.uuid().as_bytes()[..12]);
    }

    #[test]
    fn ids_too_large_and_keys_of_earlier_versions_carry_no_route() {
        let big = EventId::try_from(ROUTE_EVENT_MAX + 1).unwrap();
        let section = SectionId::try_from(3u64).unwrap();
        assert_eq!(HoldKey::generate(big, section).route(), None);
        let wide = SectionId::try_from(ROUTE_SECTION_MAX + 1).unwrap();
        assert_eq!(
            HoldKey::generate(EventId::try_from(1u64).unwrap(), wide).route(),
            None
        );
        assert_eq!(HoldKey::from(uuid::Uuid::new_v4()).route(), None);
    }
}
