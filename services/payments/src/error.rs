//! The payments service's one error type and the one table that maps it to gRPC.
//!
//! Every variant becomes a `tonic::Code` plus a stable `ErrorInfo` reason (listed per
//! RPC in `payments.proto`); the mapping lives in [`ServiceError::row`] and nowhere
//! else, the rows every service shares come from the kit. Internal details (database,
//! provider, holds messages) are logged once by the kit's conversion and never sent to
//! the caller.

use stadium_db::classify;
use stadium_kit::Reason;
use stadium_kit::service_error::{
    DEPENDENCY_UNAVAILABLE, Row, ServiceError, access_metadata, access_row, database_row,
    service_metadata, token_row,
};
use stadium_tokens::{AccessRefused, TokenError};
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
    /// An admin token refused for this call (does not verify, or lacks the roles).
    #[error(transparent)]
    Access(#[from] AccessRefused),
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
    /// The hold's event is cancelled: nothing charged.
    #[error("the event is cancelled")]
    EventCancelled,
    /// The hold expired before any charge: nothing charged.
    #[error("the hold has expired")]
    HoldExpired,
    /// The hold already has a payment asked with another payment method, and its last
    /// attempt was not declined: the key (the hold) is taken by other parameters.
    #[error("this hold is being paid, or was paid, with another payment method")]
    IdempotencyKeyReused,
    /// Another request for this hold is still running; ask again after
    /// [`IN_PROGRESS_RETRY_AFTER`] (ErrorInfo metadata `retry_after_ms`).
    #[error("a payment for this hold is in progress")]
    InProgress,
    /// The provider declined the charge: nothing charged.
    #[error("the payment was declined: {0}")]
    PaymentDeclined(String),
    /// The provider never confirmed the charge and the reconciler gave the payment up
    /// (not declined): the hold cannot be paid again, since a charge may still land; one
    /// that does is booked while the hold lasts, else refunded.
    #[error(
        "the provider never confirmed this payment and it was given up; a charge that \
         still lands is booked while the hold lasts, else refunded"
    )]
    PaymentAbandoned,
    /// The provider did not answer (or timed out); the payment stays pending and the
    /// reconciler finishes it.
    #[error("payment provider unavailable: {0}")]
    ProviderUnavailable(String),
    /// The payment was charged through a provider this process is not configured with:
    /// it is left for a process that has it (the provider's name).
    #[error("payment provider {0} is not configured in this process")]
    ProviderNotConfigured(crate::provider::ProviderName),
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
    /// The task running a payment flow stopped without an answer (a bug: it panicked);
    /// the payment stays pending and the reconciler finishes it.
    #[error("the payment flow stopped: {0}")]
    FlowStopped(String),
}

/// When a caller told `IN_PROGRESS` should ask again: long enough for a charge or a
/// booking to finish, short enough that a fan waits for nothing.
pub const IN_PROGRESS_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Error {
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
            Self::Token { source, .. } => token_row(source),
            Self::Access(refused) => access_row(refused),
            Self::InvalidField { .. } => (Code::InvalidArgument, Reason::InvalidField),
            Self::HoldNotFound => (Code::NotFound, Reason::HoldNotFound),
            Self::HoldReleased => (Code::FailedPrecondition, Reason::HoldReleased),
            Self::EventCancelled => (Code::FailedPrecondition, Reason::EventCancelled),
            Self::HoldExpired => (Code::FailedPrecondition, Reason::HoldExpired),
            Self::InProgress => (Code::Aborted, Reason::InProgress),
            Self::IdempotencyKeyReused => (Code::FailedPrecondition, Reason::IdempotencyKeyReused),
            Self::PaymentDeclined(_) => (Code::FailedPrecondition, Reason::PaymentDeclined),
            Self::PaymentAbandoned => (Code::FailedPrecondition, Reason::PaymentAbandoned),
            Self::ProviderUnavailable(_) | Self::ProviderNotConfigured(_) => {
                (Code::Unavailable, Reason::ProviderUnavailable)
            }
            Self::PriceMissing => (Code::FailedPrecondition, Reason::PriceMissing),
            Self::OrderNotFound => (Code::NotFound, Reason::OrderNotFound),
            Self::NotRefundable(_) => (Code::FailedPrecondition, Reason::NotRefundable),
            Self::NoticeSignatureInvalid => (Code::Unauthenticated, Reason::NoticeSignatureInvalid),
            Self::Dependency { .. } => DEPENDENCY_UNAVAILABLE,
            // Passed on as it came (see `passed_on`); this row is never sent.
            Self::Holds(_) => (Code::Unknown, Reason::DependencyUnavailable),
            Self::Database(e) => database_row(&classify(e)),
            Self::CorruptRow(_) | Self::FlowStopped(_) => (Code::Internal, Reason::Internal),
        }
    }

    fn metadata(&self) -> Vec<(String, String)> {
        match self {
            Self::Access(refused) => access_metadata(refused),
            Self::Dependency { service, .. } => service_metadata(service),
            Self::InProgress => vec![(
                "retry_after_ms".to_owned(),
                IN_PROGRESS_RETRY_AFTER.as_millis().to_string(),
            )],
            _ => Vec::new(),
        }
    }

    fn field(&self) -> Option<(&str, &str)> {
        match self {
            Self::InvalidField { field, problem } => Some((field, problem)),
            _ => None,
        }
    }

    fn passed_on(&self) -> Option<&Status> {
        match self {
            // Holds' own answer (reason and metadata) is the most useful thing to pass on.
            Self::Holds(status) => Some(status),
            _ => None,
        }
    }

    fn is_private(&self) -> bool {
        matches!(
            self,
            Self::Database(_)
                | Self::CorruptRow(_)
                | Self::Dependency { .. }
                | Self::ProviderUnavailable(_)
                | Self::ProviderNotConfigured(_)
        )
    }

    fn public_message(&self) -> Option<String> {
        matches!(
            self,
            Self::ProviderUnavailable(_) | Self::ProviderNotConfigured(_)
        )
        .then(|| {
            "the payment provider did not answer; the payment will be completed or refunded \
             automatically"
                .to_owned()
        })
    }
}

stadium_db::transient!(Error, Database);

stadium_kit::status_from!(Error);

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
                Error::Access(AccessRefused::RoleRequired(stadium_tokens::Access::any_of(
                    &[stadium_tokens::Role::BoxOffice],
                ))),
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
    fn in_progress_says_when_to_retry() {
        let status = Status::from(Error::InProgress);
        let info = error_info(&status).unwrap();
        assert_eq!(
            info.metadata.get("retry_after_ms").map(String::as_str),
            Some("1000")
        );
    }

    #[test]
    fn database_detail_is_not_sent() {
        let status = Status::from(Error::Database(sqlx::Error::PoolTimedOut));
        assert_eq!(status.code(), Code::Unavailable);
        assert!(!status.message().contains("pool"));
    }
}
