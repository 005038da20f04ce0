//! The payments service's one error type and the one table that maps it to gRPC.
//!
//! Every variant becomes a `tonic::Code` plus a stable `ErrorInfo` reason (listed per
//! RPC in `payments.proto`); the mapping lives in [`Error::code_and_reason`] and nowhere
//! else. Internal details (database, provider, holds messages) are logged once here and
//! never sent to the caller.

use stadium_db::{DbFailure, Transient, classify};
use stadium_kit::status::{error_status, invalid_field};
use stadium_tokens::TokenError;
use tonic::{Code, Status};

/// Everything a payments operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A token failed verification (signature, kind, issuer, audience, time window).
    #[error("{which} token refused: {source}")]
    Token {
        /// `session` or `admin`.
        which: &'static str,
        /// Why it was refused.
        source: TokenError,
    },
    /// An admin token without any of the roles this call needs.
    #[error("this call needs one of the roles {0}")]
    RoleRequired(&'static str),
    /// A request field is invalid.
    #[error("{field}: {problem}")]
    InvalidField {
        /// Proto field path, e.g. `hold_key`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// No such hold, or another fan's (indistinguishable to the caller).
    #[error("hold not found")]
    HoldNotFound,
    /// The hold was released: nothing charged.
    #[error("the hold was released")]
    HoldReleased,
    /// The hold expired before any charge: nothing charged.
    #[error("the hold has expired")]
    HoldExpired,
    /// Another request for this hold is still running.
    #[error("a payment for this hold is in progress")]
    InProgress,
    /// The provider declined the charge: nothing charged.
    #[error("the payment was declined: {0}")]
    PaymentDeclined(String),
    /// The provider did not answer (or timed out); the payment stays pending and the
    /// reconciler finishes it.
    #[error("payment provider unavailable: {0}")]
    ProviderUnavailable(String),
    /// A seat of the hold had no price when it was claimed.
    #[error("a seat of the hold has no price")]
    PriceMissing,
    /// No such order, or not the caller's.
    #[error("order not found")]
    OrderNotFound,
    /// The order is not in a state that can be refunded (pending, failed, comp).
    #[error("the order cannot be refunded (status {0})")]
    NotRefundable(&'static str),
    /// A provider notice whose signature does not verify.
    #[error("the notice's signature does not verify")]
    NoticeSignatureInvalid,
    /// Another service (holds) did not answer or answered unexpectedly.
    #[error("{service} unavailable: {detail}")]
    Dependency {
        /// Which service.
        service: &'static str,
        /// What it said.
        detail: String,
    },
    /// A status from holds passed on as is (e.g. `SEAT_TAKEN` for a comp).
    #[error("holds: {0}")]
    Holds(Status),
    /// A database error.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored row the service cannot read.
    #[error("corrupt row: {0}")]
    CorruptRow(String),
}

impl Error {
    /// An [`Error::InvalidField`].
    pub fn invalid(field: impl Into<String>, problem: impl ToString) -> Self {
        Self::InvalidField {
            field: field.into(),
            problem: problem.to_string(),
        }
    }

    /// The gRPC code and `ErrorInfo` reason of this error: the one mapping table.
    pub fn code_and_reason(&self) -> (Code, &'static str) {
        match self {
            Self::Token { source, .. } => (Code::Unauthenticated, source.reason()),
            Self::RoleRequired(_) => (Code::PermissionDenied, "ROLE_REQUIRED"),
            Self::InvalidField { .. } => {
                (Code::InvalidArgument, stadium_kit::status::INVALID_FIELD)
            }
            Self::HoldNotFound => (Code::NotFound, "HOLD_NOT_FOUND"),
            Self::HoldReleased => (Code::FailedPrecondition, "HOLD_RELEASED"),
            Self::HoldExpired => (Code::FailedPrecondition, "HOLD_EXPIRED"),
            Self::InProgress => (Code::Aborted, "IN_PROGRESS"),
            Self::PaymentDeclined(_) => (Code::FailedPrecondition, "PAYMENT_DECLINED"),
            Self::ProviderUnavailable(_) => (Code::Unavailable, "PROVIDER_UNAVAILABLE"),
            Self::PriceMissing => (Code::FailedPrecondition, "PRICE_MISSING"),
            Self::OrderNotFound => (Code::NotFound, "ORDER_NOT_FOUND"),
            Self::NotRefundable(_) => (Code::FailedPrecondition, "NOT_REFUNDABLE"),
            Self::NoticeSignatureInvalid => (Code::Unauthenticated, "NOTICE_SIGNATURE_INVALID"),
            Self::Dependency { .. } => (Code::Unavailable, "DEPENDENCY_UNAVAILABLE"),
            Self::Holds(_) => (Code::Unknown, "HOLDS"),
            Self::Database(e) => match classify(e) {
                DbFailure::SerializationFailure | DbFailure::DeadlockDetected => {
                    (Code::Aborted, "CONTENTION")
                }
                DbFailure::QueryCanceled | DbFailure::LockNotAvailable => {
                    (Code::Unavailable, "DATABASE_BUSY")
                }
                DbFailure::NotDatabase => (Code::Unavailable, "DATABASE_UNAVAILABLE"),
                _ => (Code::Internal, "INTERNAL"),
            },
            Self::CorruptRow(_) => (Code::Internal, "INTERNAL"),
        }
    }
}

impl Transient for Error {
    fn db_failure(&self) -> DbFailure {
        match self {
            Self::Database(e) => classify(e),
            _ => DbFailure::NotDatabase,
        }
    }
}

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let (code, reason) = error.code_and_reason();
        match error {
            Error::InvalidField { field, problem } => invalid_field(&field, problem),
            // Holds' own answer (reason and metadata) is the most useful thing to pass on.
            Error::Holds(status) => status,
            Error::Database(_) | Error::CorruptRow(_) | Error::Dependency { .. } => {
                if code == Code::Internal {
                    tracing::error!(error = %error, "internal error");
                } else {
                    tracing::warn!(error = %error, "dependency failure");
                }
                let message = match code {
                    Code::Internal => "internal error",
                    _ => "a dependency is unavailable, try again",
                };
                error_status(code, reason, message, [])
            }
            Error::ProviderUnavailable(_) => {
                tracing::warn!(error = %error, "provider failure");
                error_status(
                    code,
                    reason,
                    "the payment provider did not answer; the payment will be completed or \
                     refunded automatically",
                    [],
                )
            }
            Error::RoleRequired(role) => error_status(
                code,
                reason,
                error.to_string(),
                [("role".to_owned(), role.to_owned())],
            ),
            other => error_status(code, reason, other.to_string(), []),
        }
    }
}

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_info;

    use super::*;

    #[test]
    fn every_refusal_has_its_reason() {
        for (error, code, reason) in [
            (Error::HoldNotFound, Code::NotFound, "HOLD_NOT_FOUND"),
            (
                Error::HoldReleased,
                Code::FailedPrecondition,
                "HOLD_RELEASED",
            ),
            (Error::InProgress, Code::Aborted, "IN_PROGRESS"),
            (
                Error::PaymentDeclined("card_declined".into()),
                Code::FailedPrecondition,
                "PAYMENT_DECLINED",
            ),
            (
                Error::NoticeSignatureInvalid,
                Code::Unauthenticated,
                "NOTICE_SIGNATURE_INVALID",
            ),
            (
                Error::RoleRequired("box_office"),
                Code::PermissionDenied,
                "ROLE_REQUIRED",
            ),
        ] {
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(error_info(&status).unwrap().reason, reason);
        }
    }

    #[test]
    fn database_detail_is_not_sent() {
        let status = Status::from(Error::Database(sqlx::Error::PoolTimedOut));
        assert_eq!(status.code(), Code::Unavailable);
        assert!(!status.message().contains("pool"));
    }
}
