//! The one error type of the service and its mapping to gRPC statuses: each variant has
//! one `tonic::Code` and one `ErrorInfo` reason (the reasons the seat-map contract
//! lists); internal detail is logged once and never sent to the caller.

use stadium_kit::Reason;
use stadium_kit::service_error::{Row, ServiceError, database_row, token_row};
use tonic::Code;

/// Everything a seat-map call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is missing or malformed.
    #[error("{field}: {problem}")]
    InvalidField {
        /// The proto field path, e.g. `event_id`.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The fan session token did not verify.
    #[error("fan session refused: {0}")]
    Token(#[from] stadium_tokens::TokenError),
    /// No such event.
    #[error("event {0} not found")]
    EventNotFound(i64),
    /// The section is not part of the event's venue.
    #[error("section {0} not found in this event")]
    SectionNotFound(u64),
    /// The database failed or is unreachable.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Stored data breaks an invariant (e.g. a section's seat ids are not contiguous).
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
    /// A failed cache load, shared by every request that waited on it.
    #[error(transparent)]
    Shared(std::sync::Arc<Error>),
}

impl Error {
    /// A bad request field.
    pub fn invalid(field: &'static str, problem: impl Into<String>) -> Self {
        Self::InvalidField {
            field,
            problem: problem.into(),
        }
    }
}

impl ServiceError for Error {
    fn row(&self) -> Row {
        match self {
            Self::InvalidField { .. } => (Code::InvalidArgument, Reason::InvalidField),
            Self::Token(e) => token_row(e),
            Self::EventNotFound(_) => (Code::NotFound, Reason::EventNotFound),
            Self::SectionNotFound(_) => (Code::NotFound, Reason::SectionNotFound),
            Self::Database(e) => database_row(&stadium_db::classify(e)),
            Self::Corrupt(_) => (Code::Internal, Reason::Internal),
            Self::Shared(inner) => inner.row(),
        }
    }

    fn field(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidField { field, problem } => Some((field, problem)),
            Self::Shared(inner) => inner.field(),
            _ => None,
        }
    }

    fn is_private(&self) -> bool {
        match self {
            Self::Database(_) | Self::Corrupt(_) => true,
            Self::Shared(inner) => inner.is_private(),
            _ => false,
        }
    }
}

stadium_kit::status_from!(Error);

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_info;

    use tonic::Status;

    use super::*;

    #[test]
    fn each_error_has_its_code_and_reason() {
        let cases = [
            (
                Error::invalid("quantity", "must be at least 1"),
                Code::InvalidArgument,
                "INVALID_FIELD",
            ),
            (Error::EventNotFound(7), Code::NotFound, "EVENT_NOT_FOUND"),
            (
                Error::SectionNotFound(9),
                Code::NotFound,
                "SECTION_NOT_FOUND",
            ),
            (
                Error::Token(stadium_tokens::TokenError::Expired),
                Code::Unauthenticated,
                "TOKEN_EXPIRED",
            ),
            (
                Error::Database(sqlx::Error::PoolTimedOut),
                Code::Unavailable,
                "DATABASE_UNAVAILABLE",
            ),
            (Error::Corrupt("x".into()), Code::Internal, "INTERNAL"),
        ];
        for (error, code, reason) in cases {
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(error_info(&status).unwrap().reason, reason);
        }
        let shared = Status::from(Error::Shared(std::sync::Arc::new(Error::EventNotFound(3))));
        assert_eq!(error_info(&shared).unwrap().reason, "EVENT_NOT_FOUND");
        let status = Status::from(Error::Corrupt("secret detail".into()));
        assert!(!status.message().contains("secret"));
    }
}
