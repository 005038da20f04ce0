//! The service's one error type and the one table that maps it to gRPC.
//!
//! Every variant becomes a `tonic::Code` plus a stable `ErrorInfo` reason (listed per RPC
//! in `holds.proto`); the mapping lives in [`ServiceError::row`] and nowhere else, the
//! rows every service shares come from the kit. Database failures are classified by
//! SQLSTATE and constraint name in `store`, never by message text; their details are
//! logged once by the kit's conversion and never sent to the caller.

use stadium_db::classify;
use stadium_kit::Reason;
use stadium_kit::service_error::{
    Row, ServiceError, access_metadata, access_row, database_metadata, database_row, token_row,
};
use stadium_tokens::{AccessRefused, TokenError};
use tonic::Code;

use crate::domain::{HoldKey, Limit, SeatId, SectionId};

/// Everything a holds operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable bearer token in the `authorization` metadata.
    #[error("a bearer token is required: {0}")]
    MissingToken(String),
    /// A token failed verification (signature, kind, issuer, audience, time window, key).
    #[error("{which} token refused: {source}")]
    Token {
        /// `session`, `admission` or `admin`.
        which: &'static str,
        /// Why it was refused.
        source: TokenError,
    },
    /// The admission token was issued to another fan than the session's.
    #[error("the admission token belongs to another fan")]
    WrongFan,
    /// The admission token is for another event than the request's.
    #[error("the admission token is for another event")]
    WrongEvent,
    /// An admin token refused for this call (does not verify, or lacks the roles).
    #[error(transparent)]
    Access(#[from] AccessRefused),
    /// A request field is invalid.
    #[error("{field}: {problem}")]
    InvalidField {
        /// Proto field path, e.g. `seat_ids[2]`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Some seats are not seats of the requested section of this event's venue
    /// (unknown ids or another section).
    #[error("{} seats are not in the section", .0.len())]
    SeatsNotInSection(Vec<SeatId>),
    /// No such event.
    #[error("event not found")]
    EventNotFound,
    /// The event's sale is not open (status `draft`, `paused` or `closed`; `presale` for a
    /// claim without a presale code before the general on-sale).
    #[error("the event is not on sale (status {0})")]
    EventNotOnSale(String),
    /// The event is cancelled: no payment starts (nothing charged).
    #[error("the event is cancelled")]
    EventCancelled,
    /// Some of the seats have an active claim; nothing was claimed.
    #[error("{} seats are taken", taken.len())]
    SeatTaken {
        /// The taken seats among those requested (ascending).
        taken: Vec<SeatId>,
        /// Free seats of the section offered instead (ascending; may be empty).
        alternatives: Vec<SeatId>,
    },
    /// Best available: no block that fits is left (decided on fresh availability);
    /// nothing was claimed.
    #[error("no block of the requested seats is left")]
    NoBlockLeft {
        /// The most adjacent seats still free in one row of the target (0: none).
        fewer_seats: u32,
        /// The quantity is still free in one section of the target, not side by side.
        not_together: bool,
        /// Other sections of the event where the request fits (side by side when it asks
        /// `together`; seen at most 1 s ago).
        other_sections: Vec<SectionId>,
    },
    /// Best available lost every round to concurrent claims while blocks still fitted.
    #[error("seats are being claimed faster than this request could; retry")]
    Contention,
    /// The fans' claims of this database are at their bound and none finished within
    /// the claim wait (`--claim-wait-ms`); nothing was claimed. Metadata
    /// `retry_after_ms`: when to ask again (add jitter).
    #[error("too many claims at once; retry after {retry_after_ms} ms")]
    Overloaded {
        /// Milliseconds to wait before asking again.
        retry_after_ms: u64,
    },
    /// With sections on several databases, the claim's request id made a hold on
    /// another database at the same time; this claim's hold was withdrawn
    /// (`ABORTED`/`IN_PROGRESS`, metadata `hold_key`: the request's other hold, when
    /// one was seen). Retry with the same request id: it is answered the request's
    /// hold that stays, or claims anew when none does.
    #[error(
        "a claim of this request id is not settled yet (holding on another database, or its check across databases still running); retry"
    )]
    RequestInProgress {
        /// The other hold of the request, when one was seen.
        hold: Option<HoldKey>,
    },
    /// A per-claim, per-fan or per-admission limit would be exceeded.
    #[error("limit {} exceeded (max {max})", limit.as_str())]
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// Its value.
        max: u64,
        /// For `holds_per_admission`: the hold the admission already has (metadata
        /// `hold_key`), so the fan can find it.
        hold: Option<HoldKey>,
    },
    /// The claim's request id already made a hold, of other seats than this claim asks
    /// for (another section, other seats, another quantity); nothing was claimed.
    #[error("request_id was used for another claim (hold {hold})")]
    RequestIdReused {
        /// The hold the request id made (metadata `hold_key`).
        hold: HoldKey,
    },
    /// No hold with this key, or not the caller's.
    #[error("hold not found")]
    HoldNotFound,
    /// The hold is no longer held: expired, released, or reclaimed.
    #[error("the hold has expired")]
    HoldExpired,
    /// The hold is booked and can no longer be released by the fan.
    #[error("the hold is booked")]
    HoldBooked,
    /// The fan released the hold (or the box office ended it).
    #[error("the hold was released")]
    HoldReleased,
    /// The fan is paying for the hold: it can no longer be released or extended.
    #[error("the payment for this hold has started")]
    PaymentStarted,
    /// An extension would pass the hold's absolute lifetime; nothing changed.
    #[error("the hold has reached its maximum lifetime of {max_hold_lifetime_ms} ms")]
    HoldLifetimeReached {
        /// The event's absolute hold lifetime, milliseconds from the claim.
        max_hold_lifetime_ms: u64,
    },
    /// A seat of the hold has no price, so it cannot be paid for.
    #[error("a seat of the hold has no price")]
    PriceMissing,
    /// Box-office staff may end blocks only; bookings and comps end through a refund.
    #[error("only blocks can be released here; refund the order instead")]
    ReleaseNotAllowed,
    /// No such channel, or it was released to general sale.
    #[error("channel not found or released")]
    ChannelNotFound,
    /// The event already has a channel of that name.
    #[error("the event already has a channel of that name")]
    ChannelExists,
    /// Seats already given to another channel; nothing was assigned.
    #[error("{} seats belong to another channel", .0.len())]
    SeatsInAnotherChannel(Vec<SeatId>),
    /// Seats that are not the presale code's channel's; nothing was claimed.
    #[error("{} seats are not seats of the code's channel", .0.len())]
    SeatsNotInChannel(Vec<SeatId>),
    /// A presale code or channel key unknown for the event, or its channel was released.
    #[error("presale code not valid for this event")]
    PresaleCodeInvalid,
    /// An admission from the event's presale queue, used without a presale code: it
    /// claims only with one.
    #[error("an admission from the presale queue claims only with a presale code")]
    PresaleCodeRequired,
    /// Fewer free seats of the price category than asked for; nothing was assigned.
    #[error("not enough free seats of the category")]
    NotEnoughSeats,
    /// The waiting room's keys could not be fetched to verify an admission token.
    #[error("admission keys unavailable: {0}")]
    KeysUnavailable(String),
    /// The admission token was given back, taken back by staff or lost as a no-show
    /// (`UNAUTHENTICATED`/`ADMISSION_REVOKED`, as an expired admission token is
    /// `UNAUTHENTICATED`/`TOKEN_EXPIRED`).
    #[error("the admission token was revoked")]
    AdmissionRevoked,
    /// The event's revoked admissions could not be learnt recently enough to trust a
    /// token (`UNAVAILABLE`/`REVOCATIONS_UNAVAILABLE`, metadata `event_id`).
    #[error("revoked admissions of event {event_id} unavailable: {detail}")]
    RevocationsUnavailable {
        /// The event.
        event_id: i64,
        /// Why (for the log).
        detail: String,
    },
    /// A section placed on a shard already has seat rows on the main database: it
    /// must be moved, not placed.
    #[error("section {0} already has holds; move it instead")]
    SectionNotEmpty(SectionId),
    /// A hold looked up by key on a database its section has moved from (or is moving
    /// from): the caller's route was stale; retry, and the route is read anew.
    #[error("section {0} moved to another database; retry")]
    SectionMoved(SectionId),
    /// A database error (classified by SQLSTATE when mapped).
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored row the service cannot read (a status it does not know, a negative id).
    #[error("corrupt row: {0}")]
    CorruptRow(String),
}

impl Error {
    /// Whether a shard refused the call because the section is not (or not now) its
    /// own: the caller's route was stale.
    pub fn is_stale_route(&self) -> bool {
        matches!(self, Self::SectionMoved(_))
            || matches!(self, Self::Database(e) if matches!(
                classify(e),
                stadium_db::DbFailure::SectionElsewhere { .. } | stadium_db::DbFailure::SectionFenced { .. }
            ))
    }

    /// An [`Error::InvalidField`].
    pub fn invalid(field: impl Into<String>, problem: impl ToString) -> Self {
        Self::InvalidField {
            field: field.into(),
            problem: problem.to_string(),
        }
    }
}

impl ServiceError for Error {
    fn row(&self) -> Row {
        match self {
            Self::MissingToken(_) => (Code::Unauthenticated, Reason::TokenMissing),
            Self::Token { source, .. } => token_row(source),
            Self::WrongFan => (Code::PermissionDenied, Reason::WrongFan),
            Self::WrongEvent => (Code::PermissionDenied, Reason::WrongEvent),
            Self::Access(refused) => access_row(refused),
            Self::InvalidField { .. } => (Code::InvalidArgument, Reason::InvalidField),
            Self::SeatsNotInSection(_) => (Code::InvalidArgument, Reason::SeatNotInSection),
            Self::EventNotFound => (Code::NotFound, Reason::EventNotFound),
            Self::EventNotOnSale(_) => (Code::FailedPrecondition, Reason::EventNotOnSale),
            Self::EventCancelled => (Code::FailedPrecondition, Reason::EventCancelled),
            Self::SeatTaken { .. } | Self::NoBlockLeft { .. } => {
                (Code::AlreadyExists, Reason::SeatTaken)
            }
            Self::Contention => (Code::Aborted, Reason::Contention),
            Self::RequestInProgress { .. } => (Code::Aborted, Reason::InProgress),
            Self::Overloaded { .. } => (Code::ResourceExhausted, Reason::Overloaded),
            Self::LimitExceeded { .. } => (Code::ResourceExhausted, Reason::LimitExceeded),
            Self::RequestIdReused { .. } => {
                (Code::FailedPrecondition, Reason::IdempotencyKeyReused)
            }
            Self::HoldNotFound => (Code::NotFound, Reason::HoldNotFound),
            Self::HoldExpired => (Code::FailedPrecondition, Reason::HoldExpired),
            Self::HoldBooked => (Code::FailedPrecondition, Reason::HoldBooked),
            Self::HoldReleased => (Code::FailedPrecondition, Reason::HoldReleased),
            Self::PaymentStarted => (Code::FailedPrecondition, Reason::PaymentStarted),
            Self::HoldLifetimeReached { .. } => {
                (Code::FailedPrecondition, Reason::HoldLifetimeReached)
            }
            Self::PriceMissing => (Code::FailedPrecondition, Reason::PriceMissing),
            Self::ReleaseNotAllowed => (Code::FailedPrecondition, Reason::ReleaseNotAllowed),
            Self::ChannelNotFound => (Code::NotFound, Reason::ChannelNotFound),
            Self::ChannelExists => (Code::AlreadyExists, Reason::ChannelExists),
            Self::SeatsInAnotherChannel(_) => {
                (Code::FailedPrecondition, Reason::SeatInAnotherChannel)
            }
            Self::SeatsNotInChannel(_) => (Code::InvalidArgument, Reason::SeatNotInChannel),
            Self::PresaleCodeInvalid => (Code::PermissionDenied, Reason::PresaleCodeInvalid),
            Self::PresaleCodeRequired => (Code::FailedPrecondition, Reason::PresaleCodeRequired),
            Self::NotEnoughSeats => (Code::FailedPrecondition, Reason::NotEnoughSeats),
            Self::KeysUnavailable(_) => (Code::Unavailable, Reason::KeysUnavailable),
            Self::AdmissionRevoked => (Code::Unauthenticated, Reason::AdmissionRevoked),
            Self::RevocationsUnavailable { .. } => {
                (Code::Unavailable, Reason::RevocationsUnavailable)
            }
            Self::SectionNotEmpty(_) => (Code::FailedPrecondition, Reason::SectionNotEmpty),
            Self::SectionMoved(_) => (Code::Unavailable, Reason::SectionMoved),
            Self::Database(e) => database_row(&classify(e)),
            Self::CorruptRow(_) => (Code::Internal, Reason::Internal),
        }
    }

    fn metadata(&self) -> Vec<(String, String)> {
        let list = |seats: &[SeatId]| {
            seats
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Self::SeatTaken {
                taken,
                alternatives,
            } => vec![
                ("taken_seat_ids".into(), list(taken)),
                ("alternative_seat_ids".into(), list(alternatives)),
            ],
            Self::NoBlockLeft {
                fewer_seats,
                not_together,
                other_sections,
            } => vec![
                ("fewer_seats".into(), fewer_seats.to_string()),
                ("not_together".into(), not_together.to_string()),
                (
                    "other_section_ids".into(),
                    other_sections
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                ),
            ],
            Self::SeatsNotInSection(seats)
            | Self::SeatsInAnotherChannel(seats)
            | Self::SeatsNotInChannel(seats) => vec![("seat_ids".into(), list(seats))],
            Self::PresaleCodeInvalid | Self::PresaleCodeRequired => {
                vec![("field".into(), "presale_code".into())]
            }
            Self::LimitExceeded { limit, max, hold } => {
                let mut metadata = vec![
                    ("limit".into(), limit.as_str().into()),
                    ("max".into(), max.to_string()),
                ];
                metadata.extend(hold.map(|key| ("hold_key".into(), key.to_string())));
                metadata
            }
            Self::SectionMoved(section) => vec![("section_id".into(), section.to_string())],
            Self::Overloaded { retry_after_ms } => {
                vec![("retry_after_ms".into(), retry_after_ms.to_string())]
            }
            Self::RequestInProgress { hold } => hold
                .iter()
                .map(|key| ("hold_key".into(), key.to_string()))
                .collect(),
            Self::RequestIdReused { hold } => vec![
                ("field".into(), "request_id".into()),
                ("hold_key".into(), hold.to_string()),
            ],
            Self::Access(refused) => access_metadata(refused),
            Self::EventNotOnSale(status) => vec![("status".into(), status.clone())],
            Self::HoldLifetimeReached {
                max_hold_lifetime_ms,
            } => vec![(
                "max_hold_lifetime_ms".into(),
                max_hold_lifetime_ms.to_string(),
            )],
            Self::Token { which, .. } => vec![("token".into(), (*which).into())],
            Self::RevocationsUnavailable { event_id, .. } => {
                vec![("event_id".into(), event_id.to_string())]
            }
            Self::Database(e) => database_metadata(&classify(e)),
            _ => Vec::new(),
        }
    }

    fn field(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidField { field, problem } => Some((field, problem)),
            _ => None,
        }
    }

    fn is_private(&self) -> bool {
        matches!(
            self,
            Self::Database(_)
                | Self::CorruptRow(_)
                | Self::KeysUnavailable(_)
                | Self::RevocationsUnavailable { .. }
        )
    }
}

stadium_db::transient!(Error, Database);

stadium_kit::status_from!(Error);

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_info;
    use tonic::Code;

    use tonic::Status;

    use super::*;

    #[test]
    fn seat_taken_names_seats_in_metadata() {
        let seat = |n: u64| SeatId::try_from(n).unwrap();
        let status = Status::from(Error::SeatTaken {
            taken: vec![seat(3), seat(4)],
            alternatives: vec![seat(9)],
        });
        assert_eq!(status.code(), Code::AlreadyExists);
        let info = error_info(&status).unwrap();
        assert_eq!(info.reason, "SEAT_TAKEN");
        assert_eq!(info.metadata["taken_seat_ids"], "3,4");
        assert_eq!(info.metadata["alternative_seat_ids"], "9");
    }

    #[test]
    fn database_detail_stays_private() {
        let status = Status::from(Error::Database(sqlx::Error::PoolTimedOut));
        assert_eq!(status.code(), Code::Unavailable);
        assert!(!status.message().contains("pool"));
        let status = Status::from(Error::invalid("seat_ids[0]", "must not be zero"));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(
            error_info(&status).unwrap().metadata["field"],
            "seat_ids[0]"
        );
    }
}
