//! The waiting room's one error type and its mapping to gRPC statuses.
//!
//! Each variant maps to one `tonic::Code` and one `ErrorInfo.reason` (listed per RPC in
//! `waiting_room.proto`); [`From<Error> for Status`](Error) logs server-side failures
//! once and returns a message safe to show a client.

use stadium_kit::status::{error_status, invalid_field};
use stadium_tokens::TokenError;
use tonic::{Code, Status};

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
    /// The admin token lacks every role the RPC accepts (`PERMISSION_DENIED`/
    /// `ROLE_REQUIRED`).
    #[error("one of the roles {0} is required")]
    RoleRequired(&'static str),
    /// No queue is configured for the event (`NOT_FOUND`/`EVENT_NOT_FOUND`).
    #[error("event {0} has no queue")]
    EventNotFound(String),
    /// The sale is closed (`FAILED_PRECONDITION`/`EVENT_NOT_ON_SALE`).
    #[error("event {0} is not on sale")]
    NotOnSale(String),
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

    /// The gRPC code and `ErrorInfo.reason` of this error.
    pub fn code_and_reason(&self) -> (Code, &'static str) {
        match self {
            Self::InvalidField { .. } => {
                (Code::InvalidArgument, stadium_kit::status::INVALID_FIELD)
            }
            Self::Credential(e) => (Code::Unauthenticated, e.reason()),
            Self::Ticket(TokenError::Expired) => (Code::Unauthenticated, "TICKET_EXPIRED"),
            Self::Ticket(_) | Self::TicketOtherEvent => (Code::Unauthenticated, "TICKET_INVALID"),
            Self::WrongFan => (Code::PermissionDenied, "WRONG_FAN"),
            Self::RoleRequired(_) => (Code::PermissionDenied, "ROLE_REQUIRED"),
            Self::EventNotFound(_) => (Code::NotFound, "EVENT_NOT_FOUND"),
            Self::NotOnSale(_) => (Code::FailedPrecondition, "EVENT_NOT_ON_SALE"),
            Self::NotYetOpen(_) => (Code::FailedPrecondition, "NOT_YET_OPEN"),
            Self::AlreadyOpen(_) => (Code::FailedPrecondition, "ALREADY_OPEN"),
            Self::AdmissionExpired => (Code::FailedPrecondition, "ADMISSION_EXPIRED"),
            Self::Redis(_) => (Code::Unavailable, "QUEUE_STORE_UNAVAILABLE"),
            Self::Internal(_) => (Code::Internal, "INTERNAL"),
        }
    }
}

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        if let Error::InvalidField { field, problem } = &error {
            return invalid_field(field, problem);
        }
        let (code, reason) = error.code_and_reason();
        let message = match &error {
            Error::Redis(e) => {
                tracing::warn!(error = %e, "queue store failed");
                "the queue store is unavailable; retry shortly".to_owned()
            }
            Error::Internal(e) => {
                tracing::error!(error = %e, "internal error");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let metadata: Vec<(String, String)> = match &error {
            Error::EventNotFound(id)
            | Error::NotOnSale(id)
            | Error::NotYetOpen(id)
            | Error::AlreadyOpen(id) => vec![("event_id".to_owned(), id.clone())],
            _ => Vec::new(),
        };
        error_status(code, reason, message, metadata)
    }
}

#[cfg(test)]
mod tests {
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
