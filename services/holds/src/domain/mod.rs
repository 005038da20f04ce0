//! The holds domain, free of wire and database types: identifiers validated once at the
//! edge, the seat set of one claim (sorted, distinct, bounded), who claims, and a hold as
//! the service reports it.

pub mod alternatives;
pub mod best;
mod ids;
pub mod presale;
mod queue;
pub mod refusal;
pub mod room;

pub use presale::PresaleCode;
pub use queue::Queue;

pub use ids::{EventId, FanId, HoldKey, IdError, RequestId, SeatId, SectionId};

/// Most seat ids one request may name, whoever sends it: a bound on the work a single
/// call can cause before any event setting is read. Fans are further limited by the
/// event's `max_seats_per_claim`.
pub const MAX_SEATS_PER_REQUEST: usize = 1000;

/// The seats of one claim: at least one, distinct, at most [`MAX_SEATS_PER_REQUEST`],
/// kept in ascending id order because that is the order rows are locked and inserted
/// in (the lock order that keeps two overlapping claims from deadlocking).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatSet(Vec<SeatId>);

/// Why a list of seat ids is not a [`SeatSet`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatSetError {
    /// No seat ids at all.
    #[error("at least one seat id is required")]
    Empty,
    /// More than [`MAX_SEATS_PER_REQUEST`] ids.
    #[error("at most {MAX_SEATS_PER_REQUEST} seat ids may be given, got {0}")]
    TooMany(usize),
    /// The id at this index is zero or beyond `i64::MAX`.
    #[error("seat_ids[{index}]: {source}")]
    BadId {
        /// Position in the request.
        index: usize,
        /// What is wrong with it.
        source: IdError,
    },
    /// The id at `index` repeats an earlier one.
    #[error("seat_ids[{index}]: seat {seat} is repeated")]
    Repeated {
        /// Position of the repeat in the request.
        index: usize,
        /// The repeated id.
        seat: u64,
    },
}

impl SeatSet {
    /// Validates wire seat ids (in any order) into an ascending set.
    ///
    /// # Errors
    /// [`SeatSetError`] for an empty or oversized list, a zero/oversized id, or a repeat.
    pub fn from_wire(ids: &[u64]) -> Result<Self, SeatSetError> {
        if ids.is_empty() {
            return Err(SeatSetError::Empty);
        }
        if ids.len() > MAX_SEATS_PER_REQUEST {
            return Err(SeatSetError::TooMany(ids.len()));
        }
        let mut seats = Vec::with_capacity(ids.len());
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for (index, &raw) in ids.iter().enumerate() {
            let seat =
                SeatId::try_from(raw).map_err(|source| SeatSetError::BadId { index, source })?;
            if !seen.insert(seat) {
                return Err(SeatSetError::Repeated { index, seat: raw });
            }
            seats.push(seat);
        }
        seats.sort_unstable();
        Ok(Self(seats))
    }

    /// The seats, ascending.
    pub fn as_slice(&self) -> &[SeatId] {
        &self.0
    }

    /// How many seats (never zero).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a seat set holds at least one seat.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The ids as database integers, ascending.
    pub fn raw(&self) -> Vec<i64> {
        self.0.iter().map(|s| s.get()).collect()
    }
}

/// Who claims seats, which decides the row's status and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimant {
    /// A fan with a verified admission token: a `held` row that expires after the
    /// event's hold TTL, subject to the per-claim, per-fan and per-admission limits.
    Fan {
        /// The session's `sub`, equal to the admission token's `sub`.
        fan: FanId,
        /// The admission token's `jti`.
        admission_jti: String,
    },
    /// Box office staff blocking seats: a `blocked` row that never expires.
    Block {
        /// The admin token's `sub`.
        admin: String,
        /// Why, for the audit trail.
        reason: String,
    },
    /// A comp: a `booked` row given away to `recipient`.
    Comp {
        /// The admin token's `sub`.
        admin: String,
        /// Who receives the seats.
        recipient: String,
    },
}

/// A validated claim: one event, one section, its seats, and who claims them.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The event.
    pub event: EventId,
    /// The one section every seat must lie in.
    pub section: SectionId,
    /// The seats, ascending.
    pub seats: SeatSet,
    /// Who claims.
    pub claimant: Claimant,
    /// The client's id for this claim (fans only): a retry with it finds the hold the
    /// claim made instead of making another.
    pub request: Option<RequestId>,
}

impl Claim {
    /// The key of the hold this claim makes, carrying its event and section: for a
    /// fan's claim with a request id, the one [`HoldKey::for_request`] derives (the
    /// same for every retry); else fresh.
    pub fn hold_key(&self) -> HoldKey {
        match (&self.claimant, &self.request) {
            (Claimant::Fan { fan, .. }, Some(request)) => {
                HoldKey::for_request(self.event, fan, request, self.section)
            }
            _ => HoldKey::generate(self.event, self.section),
        }
    }
}

/// Status shared by every seat of a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldStatus {
    /// Claimed by a fan until `expires_in_ms` runs out.
    Held,
    /// Paid for, or given as a comp.
    Booked,
    /// Past its TTL (whether or not a sweeper or claim has marked it yet).
    Expired,
    /// Given up by the fan or ended by the box office.
    Released,
    /// Blocked by the box office.
    Blocked,
}

impl HoldStatus {
    /// Parses the `status` column; `None` for a value this version does not know.
    pub fn from_db(s: &str) -> Option<Self> {
        Some(match s {
            "held" => Self::Held,
            "booked" => Self::Booked,
            "expired" => Self::Expired,
            "released" => Self::Released,
            "blocked" => Self::Blocked,
            _ => return None,
        })
    }

    /// The `status` column's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Held => "held",
            Self::Booked => "booked",
            Self::Expired => "expired",
            Self::Released => "released",
            Self::Blocked => "blocked",
        }
    }
}

/// Who a hold's rows were claimed by (the `kind` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldKind {
    /// A fan's claim ([`Claimant::Fan`]).
    Fan,
    /// The box office's block ([`Claimant::Block`]).
    Block,
    /// The box office's comp ([`Claimant::Comp`]).
    Comp,
    /// A channel's seats set aside (`holds.channels`, one hold per channel).
    Channel,
}

impl HoldKind {
    /// Parses the `kind` column; `None` for a value this version does not know.
    pub fn from_db(s: &str) -> Option<Self> {
        Some(match s {
            "fan" => Self::Fan,
            "block" => Self::Block,
            "comp" => Self::Comp,
            "channel" => Self::Channel,
            _ => return None,
        })
    }

    /// The `kind` column's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fan => "fan",
            Self::Block => "block",
            Self::Comp => "comp",
            Self::Channel => "channel",
        }
    }
}

impl Claimant {
    /// The kind of the rows this claimant's claim makes.
    pub fn kind(&self) -> HoldKind {
        match self {
            Self::Fan { .. } => HoldKind::Fan,
            Self::Block { .. } => HoldKind::Block,
            Self::Comp { .. } => HoldKind::Comp,
        }
    }
}

/// A hold as reported to callers. Times are durations by the server's (database's)
/// clock, never absolute instants for a client to trust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The hold key.
    pub key: HoldKey,
    /// The event.
    pub event: EventId,
    /// The section.
    pub section: SectionId,
    /// The seats, ascending.
    pub seats: Vec<SeatId>,
    /// The status every seat shares (Expired when any seat has lapsed).
    pub status: HoldStatus,
    /// Milliseconds until expiry; 0 once not held.
    pub expires_in_ms: u64,
    /// The TTL the hold was claimed with, in milliseconds (0 for blocks and comps).
    pub ttl_ms: u64,
    /// Who owns the hold: the fan, or the admin who made a block or comp.
    pub owner: String,
}

/// Which limit a claim ran into (`ErrorInfo` metadata `limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// More seats in one claim than the event's `max_seats_per_claim`.
    SeatsPerClaim,
    /// The fan's active seats plus this claim exceed the event's `max_seats_per_fan`.
    SeatsPerFan,
    /// The admission token already has an active hold.
    HoldsPerAdmission,
    /// Seats in live holds made with the presale code, this claim's included, exceed
    /// the code's limit.
    CodeSeats,
    /// The fan's seats in live holds made with the code exceed its per-fan limit.
    CodeSeatsPerFan,
}

impl Limit {
    /// The metadata value: `seats_per_claim`, `seats_per_fan`, `holds_per_admission`,
    /// `code_seats` or `code_seats_per_fan`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SeatsPerClaim => "seats_per_claim",
            Self::SeatsPerFan => "seats_per_fan",
            Self::HoldsPerAdmission => "holds_per_admission",
            Self::CodeSeats => "code_seats",
            Self::CodeSeatsPerFan => "code_seats_per_fan",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seat_sets_sort_and_refuse_bad_input() {
        let set = SeatSet::from_wire(&[7, 3, 5]).unwrap();
        assert_eq!(set.raw(), vec![3, 5, 7]);
        assert_eq!(SeatSet::from_wire(&[]), Err(SeatSetError::Empty));
        assert_eq!(
            SeatSet::from_wire(&[4, 2, 4]),
            Err(SeatSetError::Repeated { index: 2, seat: 4 })
        );
        assert!(matches!(
            SeatSet::from_wire(&[1, 0]),
            Err(SeatSetError::BadId { index: 1, .. })
        ));
        assert!(matches!(
            SeatSet::from_wire(&[u64::MAX]),
            Err(SeatSetError::BadId { index: 0, .. })
        ));
        let many: Vec<u64> = (1..=(MAX_SEATS_PER_REQUEST as u64 + 1)).collect();
        assert!(matches!(
            SeatSet::from_wire(&many),
            Err(SeatSetError::TooMany(_))
        ));
    }
}
