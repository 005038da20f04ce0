//! Every `google.rpc.ErrorInfo` reason a stadium service answers with, typed.
//!
//! Services build their statuses from a [`Reason`] and clients read one back with
//! [`Reason::of`], so no side compares reason strings. The reasons each RPC may answer
//! are listed with the RPC in its proto; the text of each is UPPER_SNAKE_CASE, at most 63
//! characters (AIP-193), and never changes once published.

use std::fmt;

use tonic::Status;

use crate::status::{DOMAIN, error_info};

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident = $text:literal,)*) => {
        /// A stable `ErrorInfo.reason` of the `stadium` domain.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Reason {
            $($(#[$doc])* $name,)*
        }

        impl Reason {
            /// Every reason, in declaration order.
            pub const ALL: &'static [Reason] = &[$(Reason::$name,)*];

            /// The reason as it travels, e.g. `"SEAT_TAKEN"`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$name => $text,)*
                }
            }

            /// The reason named `text`; `None` for a text this version does not know.
            pub fn parse(text: &str) -> Option<Reason> {
                match text {
                    $($text => Some(Reason::$name),)*
                    _ => None,
                }
            }
        }
    };
}

reasons! {
    // The edge every service shares.
    /// No usable bearer token in the `authorization` metadata.
    TokenMissing = "TOKEN_MISSING",
    /// A token that does not verify (signature, issuer, audience, kind, claims).
    TokenInvalid = "TOKEN_INVALID",
    /// A token past its `exp`.
    TokenExpired = "TOKEN_EXPIRED",
    /// A verified admin token without any role the call accepts (metadata `roles`).
    RoleRequired = "ROLE_REQUIRED",
    /// A request field that fails validation (metadata `field`).
    InvalidField = "INVALID_FIELD",
    /// A bug or corrupt stored data; the detail is logged, never sent.
    Internal = "INTERNAL",
    /// The database did not answer (connection refused, pool exhausted).
    DatabaseUnavailable = "DATABASE_UNAVAILABLE",
    /// The database gave up on the statement (statement or lock timeout).
    DatabaseBusy = "DATABASE_BUSY",
    /// A concurrent change won (serialization failure, deadlock, lost rounds): retry.
    Contention = "CONTENTION",
    /// Another stadium service did not answer (metadata `service`).
    DependencyUnavailable = "DEPENDENCY_UNAVAILABLE",
    /// The keys to verify a token could not be fetched.
    KeysUnavailable = "KEYS_UNAVAILABLE",
    /// A request body larger than its method accepts (metadata `limit_bytes`).
    RequestTooLarge = "REQUEST_TOO_LARGE",
    /// An idempotency key already used with other parameters (Stripe's definition).
    IdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED",

    // Events and their sale.
    /// No such event.
    EventNotFound = "EVENT_NOT_FOUND",
    /// The event's sale is not open.
    EventNotOnSale = "EVENT_NOT_ON_SALE",
    /// The event is closed; it no longer changes.
    EventClosed = "EVENT_CLOSED",
    /// The event is cancelled: nothing is sold, paid orders are refunded.
    EventCancelled = "EVENT_CANCELLED",
    /// A cancellation was asked about for an event that is not cancelled.
    NotCancelled = "NOT_CANCELLED",
    /// No such venue.
    VenueNotFound = "VENUE_NOT_FOUND",
    /// The section is not part of the event's venue.
    SectionNotFound = "SECTION_NOT_FOUND",
    /// No such seat in the event's venue (metadata `field`).
    SeatNotFound = "SEAT_NOT_FOUND",
    /// A seating plan that does not parse or is wrong (metadata `path`, `problem`).
    PlanInvalid = "PLAN_INVALID",
    /// The sale is not in a state the change starts from (metadata `from`, `to`).
    InvalidTransition = "INVALID_TRANSITION",
    /// Seats of some categories have no price (metadata `categories`).
    PricesMissing = "PRICES_MISSING",
    /// A presale asked for once the event's on-sale time has come (metadata
    /// `onsale_at`).
    OnsaleTimePassed = "ONSALE_TIME_PASSED",
    /// A service this call needs is not configured (metadata `service`).
    NotConfigured = "NOT_CONFIGURED",

    // The waiting room.
    /// The event has not opened yet.
    NotYetOpen = "NOT_YET_OPEN",
    /// The event opened already; its opening can no longer be scheduled.
    AlreadyOpen = "ALREADY_OPEN",
    /// A queue ticket that does not verify or is for another event.
    TicketInvalid = "TICKET_INVALID",
    /// A queue ticket past its lifetime.
    TicketExpired = "TICKET_EXPIRED",
    /// The fan's admission ran out.
    AdmissionExpired = "ADMISSION_EXPIRED",
    /// The fan's admission was given back (`ReleaseAdmission`), taken back by staff
    /// (`RevokeAdmission`) or lost for want of a claim in time (no-show): its token is
    /// refused and no other is issued.
    AdmissionRevoked = "ADMISSION_REVOKED",
    /// Holds could not learn an event's revoked admissions recently enough to trust a
    /// token (metadata `event_id`); retrying is safe.
    RevocationsUnavailable = "REVOCATIONS_UNAVAILABLE",
    /// The section's holds are not on the shard the call was routed to (a stale route,
    /// or a section that moved; metadata `section_id`): nothing was done, retry.
    SectionMoved = "SECTION_MOVED",
    /// The section is being moved between shards: nothing was done, retry after the
    /// metadata's `retry_after_ms`.
    SectionMoving = "SECTION_MOVING",
    /// A section placed on a shard already has holds where it is: it must be moved.
    SectionNotEmpty = "SECTION_NOT_EMPTY",
    /// A section's route names a database that neither has its holds nor a half-done
    /// move of them (metadata `section_id`, `shard`): the route or the databases were
    /// changed by hand, and an SRE must look before anything moves.
    SectionOffRoute = "SECTION_OFF_ROUTE",
    /// The queue's store (Redis) did not answer.
    QueueStoreUnavailable = "QUEUE_STORE_UNAVAILABLE",
    /// The server is running as many calls of this method as it takes at once; nothing
    /// was done: retry after the metadata's `retry_after_ms` (with jitter).
    Overloaded = "OVERLOADED",
    /// The queue's store lost the event (Redis restarted empty) and the box office has
    /// not configured it again yet: keep the queue ticket and ask again after the
    /// metadata's `retry_after_ms`.
    QueueRestoring = "QUEUE_RESTORING",
    /// The waiting list takes fans only once the event is sold out: seats are free or
    /// held by the latest report (join the queue instead).
    NotSoldOut = "NOT_SOLD_OUT",
    /// The fan never joined the event's waiting list.
    NotOnWaitingList = "NOT_ON_WAITING_LIST",

    // Holds.
    /// A token or ticket issued to another fan.
    WrongFan = "WRONG_FAN",
    /// An admission token for another event.
    WrongEvent = "WRONG_EVENT",
    /// Seats that are not seats of the requested section (metadata `seat_ids`).
    SeatNotInSection = "SEAT_NOT_IN_SECTION",
    /// Seats already claimed; nothing was claimed (metadata names what is possible).
    SeatTaken = "SEAT_TAKEN",
    /// A per-claim, per-fan or per-admission limit (metadata `limit`, `max`).
    LimitExceeded = "LIMIT_EXCEEDED",
    /// No such hold, or not the caller's.
    HoldNotFound = "HOLD_NOT_FOUND",
    /// The hold lapsed.
    HoldExpired = "HOLD_EXPIRED",
    /// The hold is booked.
    HoldBooked = "HOLD_BOOKED",
    /// The hold was released.
    HoldReleased = "HOLD_RELEASED",
    /// The payment for the hold has started; it can no longer be released or extended.
    PaymentStarted = "PAYMENT_STARTED",
    /// An extension would pass the hold's absolute lifetime.
    HoldLifetimeReached = "HOLD_LIFETIME_REACHED",
    /// A seat of the hold has no price.
    PriceMissing = "PRICE_MISSING",
    /// Only blocks are released here; bookings end through a refund.
    ReleaseNotAllowed = "RELEASE_NOT_ALLOWED",
    /// No such channel, or it was released to general sale.
    ChannelNotFound = "CHANNEL_NOT_FOUND",
    /// The event already has a channel of that name.
    ChannelExists = "CHANNEL_EXISTS",
    /// Seats already given to another channel (metadata `seat_ids`).
    SeatInAnotherChannel = "SEAT_IN_ANOTHER_CHANNEL",
    /// Seats that are not the presale code's channel's (metadata `seat_ids`).
    SeatNotInChannel = "SEAT_NOT_IN_CHANNEL",
    /// A presale code or channel key unknown for the event, or its channel was released.
    PresaleCodeInvalid = "PRESALE_CODE_INVALID",
    /// An admission from an event's presale queue used without a presale code (field
    /// `presale_code`).
    PresaleCodeRequired = "PRESALE_CODE_REQUIRED",
    /// Fewer free seats than asked for (metadata `available`).
    NotEnoughSeats = "NOT_ENOUGH_SEATS",

    // Payments.
    /// Another request for the same hold is still running.
    InProgress = "IN_PROGRESS",
    /// The provider declined the charge; nothing was charged.
    PaymentDeclined = "PAYMENT_DECLINED",
    /// The provider never confirmed the charge and the payment was given up; a charge
    /// that still lands is booked while the hold lasts, else refunded.
    PaymentAbandoned = "PAYMENT_ABANDONED",
    /// The provider did not answer; the payment is finished later.
    ProviderUnavailable = "PROVIDER_UNAVAILABLE",
    /// No such order, or not the caller's.
    OrderNotFound = "ORDER_NOT_FOUND",
    /// The order cannot be refunded in its state.
    NotRefundable = "NOT_REFUNDABLE",
    /// A provider notice whose signature does not verify.
    NoticeSignatureInvalid = "NOTICE_SIGNATURE_INVALID",
}

impl Reason {
    /// The reason of `status`: its `ErrorInfo` of domain `stadium`, if it has one this
    /// version knows. `None` for a status without one (a transport failure, a deadline
    /// the client set, another system's answer).
    pub fn of(status: &Status) -> Option<Reason> {
        error_info(status)
            .filter(|info| info.domain == DOMAIN)
            .and_then(|info| Reason::parse(&info.reason))
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use tonic::Code;
    use tonic_types::StatusExt;

    use super::*;
    use crate::status::error_status;

    #[test]
    fn every_reason_parses_back_and_follows_aip_193() {
        let mut seen = HashSet::new();
        for &reason in Reason::ALL {
            let text = reason.as_str();
            assert!(seen.insert(text), "{text} twice");
            assert_eq!(Reason::parse(text), Some(reason));
            assert!(text.len() <= 63);
            assert!(
                text.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                "{text}"
            );
        }
        assert_eq!(Reason::parse("SEAT_TAKEN "), None);
    }

    #[test]
    fn a_status_gives_its_reason_back() {
        let status = error_status(Code::AlreadyExists, Reason::SeatTaken, "taken", []);
        assert_eq!(Reason::of(&status), Some(Reason::SeatTaken));
        assert_eq!(Reason::of(&Status::unavailable("connection refused")), None);
        let foreign = Status::with_error_details(
            Code::AlreadyExists,
            "taken",
            tonic_types::ErrorDetails::with_error_info(
                "SEAT_TAKEN",
                "example.com",
                std::collections::HashMap::new(),
            ),
        );
        assert_eq!(Reason::of(&foreign), None);
    }
}
