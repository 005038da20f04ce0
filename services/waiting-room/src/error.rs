//! The waiting room's one error type and its mapping to gRPC statuses.
//!
//! Each variant maps to one `tonic::Code` and one `ErrorInfo.reason` (listed per RPC in
//! `waiting_room.proto`); the kit's conversion logs server-side failures once and
//! returns a message safe to show a client.

use stadium_kit::Reason;
use stadium_kit::service_error::{Row, ServiceError, access_metadata, access_row, token_row};
use stadium_tokens::{AccessRefused, TokenError};
use tonic::Code;

use crate::domain::poll::RESTORING_POLL_MS;

/// Everything that can go wrong in the waiting room.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field failed validation (`INVALID_ARGUMENT`/`INVALID_FIELD`).
    #[error("{field}: {problem}")]
    InvalidField {
        /// The proto field path, e.g. `event_id`.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The fan session or admin token did not verify (`UNAUTHENTICATED`,
    /// `TOKEN_EXPIRED` or `TOKEN_INVALID`).
    #[error("credential refused: {0}")]
    Credential(TokenError),
    /// The queue ticket is forged, of another event, or otherwise does not verify
    /// (`UNAUTHENTICATED`/`TICKET_INVALID`, or `TICKET_EXPIRED`).
    #[error("queue ticket refused: {0}")]
    Ticket(TokenError),
    /// The queue ticket names another event than the request (`UNAUTHENTICATED`/
    /// `TICKET_INVALID`).
    #[error("queue ticket is for another event")]
    TicketOtherEvent,
    /// The queue ticket belongs to another fan (`PERMISSION_DENIED`/`WRONG_FAN`).
    #[error("queue ticket belongs to another fan")]
    WrongFan,
    /// The admin token does not verify or lacks every role the RPC accepts
    /// (`UNAUTHENTICATED`, or `PERMISSION_DENIED`/`ROLE_REQUIRED`).
    #[error(transparent)]
    Access(#[from] AccessRefused),
    /// No queue is configured for the event (`NOT_FOUND`/`EVENT_NOT_FOUND`).
    #[error("event {0} has no queue")]
    EventNotFound(String),
    /// The sale is closed (`FAILED_PRECONDITION`/`EVENT_NOT_ON_SALE`).
    #[error("event {0} is not on sale")]
    NotOnSale(String),
    /// The event is cancelled (`FAILED_PRECONDITION`/`EVENT_CANCELLED`).
    #[error("event {0} is cancelled")]
    EventCancelled(String),
    /// The event has not opened yet (`FAILED_PRECONDITION`/`NOT_YET_OPEN`).
    #[error("event {0} has not opened yet")]
    NotYetOpen(String),
    /// Asked to schedule an event that already opened (`FAILED_PRECONDITION`/
    /// `ALREADY_OPEN`).
    #[error("event {0} has already opened")]
    AlreadyOpen(String),
    /// The fan's admission ran out (token expired, or not fetched within its lifetime)
    /// (`FAILED_PRECONDITION`/`ADMISSION_EXPIRED`).
    #[error("the admission has expired")]
    AdmissionExpired,
    /// The fan's admission was given back, taken back or lost as a no-show
    /// (`FAILED_PRECONDITION`/`ADMISSION_REVOKED`).
    #[error("the admission was revoked")]
    AdmissionRevoked,
    /// The waiting list takes no fan while seats are free or held and the list is empty
    /// (`FAILED_PRECONDITION`/`NOT_SOLD_OUT`).
    #[error("event {0} is not sold out")]
    NotSoldOut(String),
    /// The fan never joined the event's waiting list (`NOT_FOUND`/
    /// `NOT_ON_WAITING_LIST`).
    #[error("not on the waiting list of event {0}")]
    NotOnWaitingList(String),
    /// The store does not know an event that exists (a signed ticket names it, or this
    /// replica served it): Redis lost its data and the box office has not configured
    /// the event again yet (`UNAVAILABLE`/`QUEUE_RESTORING`, metadata `event_id` and
    /// `retry_after_ms`, [`RESTORING_POLL_MS`]).
    #[error("event {0} is being restored")]
    QueueRestoring(String),
    /// Redis failed or is unreachable (`UNAVAILABLE`/`QUEUE_STORE_UNAVAILABLE`).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A bug or corrupt state (`INTERNAL`/`INTERNAL`).
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    /// `INVALID_ARGUMENT` for `field`.
    pub fn invalid(field: &'static str, problem: impl Into<String>) -> Self {
        Self::InvalidField {
            field,
            problem: problem.into(),
        }
    }

    /// This error for a caller who proved the event exists (a signed queue ticket): an
    /// event the store does not know was lost with its data, so
    /// [`Error::EventNotFound`] becomes [`Error::QueueRestoring`].
    pub fn vouched(self) -> Self {
        match self {
            Self::EventNotFound(id) => Self::QueueRestoring(id),
            other => other,
        }
    }
}

impl ServiceError for Error {
    fn row(&self) -> Row {
        match self {
            Self::InvalidField { .. } => (Code::InvalidArgument, Reason::InvalidField),
            Self::Credential(e) => token_row(e),
            Self::Ticket(TokenError::Expired) => (Code::Unauthenticated, Reason::TicketExpired),
            Self::Ticket(_) | Self::TicketOtherEvent => {
                (Code::Unauthenticated, Reason::TicketInvalid)
            }
            Self::WrongFan => (Code::PermissionDenied, Reason::WrongFan),
            Self::Access(refused) => access_row(refused),
            Self::EventNotFound(_) => (Code::NotFound, Reason::EventNotFound),
            Self::NotOnSale(_) => (Code::FailedPrecondition, Reason::EventNotOnSale),
            Self::EventCancelled(_) => (Code::FailedPrecondition, Reason::EventCancelled),
            Self::NotYetOpen(_) => (Code::FailedPrecondition, Reason::NotYetOpen),
            Self::AlreadyOpen(_) => (Code::FailedPrecondition, Reason::AlreadyOpen),
            Self::AdmissionExpired => (Code::FailedPrecondition, Reason::AdmissionExpired),
            Self::AdmissionRevoked => (Code::FailedPrecondition, Reason::AdmissionRevoked),
            Self::QueueRestoring(_) => (Code::Unavailable, Reason::QueueRestoring),
            Self::NotSoldOut(_) => (Code::FailedPrecondition, Reason::NotSoldOut),
            Self::NotOnWaitingList(_) => (Code::NotFound, Reason::NotOnWaitingList),
            Self::Redis(_) => (Code::Unavailable, Reason::QueueStoreUnavailable),
            Self::Internal(_) => (Code::Internal, Reason::Internal),
        }
    }

    fn metadata(&self) -> Vec<(String, String)> {
        match self {
            Self::EventNotFound(id)
            | Self::NotOnSale(id)
            | Self::EventCancelled(id)
            | Self::NotYetOpen(id)
            | Self::AlreadyOpen(id)
            | Self::NotSoldOut(id)
            | Self::NotOnWaitingList(id) => vec![("event_id".to_owned(), id.clone())],
            Self::QueueRestoring(id) => vec![
                ("event_id".to_owned(), id.clone()),
                ("retry_after_ms".to_owned(), RESTORING_POLL_MS.to_string()),
            ],
            Self::Access(refused) => access_metadata(refused),
            _ => Vec::new(),
        }
    }

    fn field(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidField { field, problem } => Some((field, problem)),
            _ => None,
        }
    }

    fn public_message(&self) -> Option<String> {
        match self {
            Self::Redis(_) => Some("the queue store is unavailable; retry shortly".to_owned()),
            Self::QueueRestoring(id) => Some(format!(
                "the queue of event {id} is being restored; keep the queue ticket and retry \
                 in {RESTORING_POLL_MS} ms"
            )),
            _ => None,
        }
    }
}

stadium_kit::status_from!(Error);

#[cfg(test)]
mod tests {
    use tonic::Status;

    use super::*;

    #[test]
    fn statuses_carry_reasons() {
        let cases = [
            (
                Error::invalid("event_id", "empty"),
                Code::InvalidArgument,
                "INVALID_FIELD",
            ),
            (
                Error::Ticket(TokenError::Expired),
                Code::Unauthenticated,
                "TICKET_EXPIRED",
            ),
            (
                Error::Ticket(TokenError::BadSignature),
                Code::Unauthenticated,
                "TICKET_INVALID",
            ),
            (Error::WrongFan, Code::PermissionDenied, "WRONG_FAN"),
            (
                Error::EventNotFound("7".into()),
                Code::NotFound,
                "EVENT_NOT_FOUND",
            ),
            (
                Error::EventNotFound("7".into()).vouched(),
                Code::Unavailable,
                "QUEUE_RESTORING",
            ),
            (Error::Internal("x".into()), Code::Internal, "INTERNAL"),
        ];
        for (error, code, reason) in cases {
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            let info = stadium_kit::status::error_info(&status).unwrap();
            assert_eq!(info.reason, reason);
        }
    }
}
