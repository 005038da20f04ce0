//! The shared edge of every service's errors: a service's error type implements
//! [`ServiceError`] (its one table of code and reason per variant) and turns into a
//! `tonic::Status` through [`to_status`], which logs once and keeps private detail
//! private. The rows every service shares — database failures, refused tokens, missing
//! roles, an unanswered dependency — are written here once, so no service retypes them.
//!
//! The shape follows quickwit's `quickwit-proto/src/error.rs` (`ServiceError` and one
//! conversion to a gRPC status).

use std::fmt::Display;

use stadium_db::DbFailure;
use stadium_tokens::{Access, AccessRefused, TokenError};
use tonic::{Code, Status};

use crate::reason::Reason;
use crate::status::{error_status, invalid_field};

/// One row of a service's error table: the gRPC code and the `ErrorInfo` reason.
pub type Row = (Code, Reason);

/// An error a service answers with.
pub trait ServiceError: std::error::Error {
    /// The code and reason of this error: the service's one mapping table.
    fn row(&self) -> Row;

    /// `ErrorInfo` metadata, as string pairs (empty by default).
    fn metadata(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The request field at fault and what is wrong with it; answered by
    /// [`invalid_field`] (with a `BadRequest` violation) when present.
    fn field(&self) -> Option<(&str, &str)> {
        None
    }

    /// Another service's answer to pass on as it came (its reason and metadata are the
    /// most useful thing to tell the caller).
    fn passed_on(&self) -> Option<&Status> {
        None
    }

    /// Whether the detail stays on the server: the caller reads [`private_message`]
    /// instead of this error's text. By default for `INTERNAL`, `UNAVAILABLE` and
    /// `UNKNOWN`; a service adds its own (every database failure, whatever its code).
    fn is_private(&self) -> bool {
        matches!(
            self.row().0,
            Code::Internal | Code::Unavailable | Code::Unknown
        )
    }

    /// A message for the caller other than the usual one (this error's text, or
    /// [`private_message`] for a private error): e.g. what happens next after a
    /// provider timeout.
    fn public_message(&self) -> Option<String> {
        None
    }
}

/// The message sent instead of a private detail: `"internal error"` for `INTERNAL`,
/// `"a concurrent change won; retry"` for `ABORTED`, `"temporarily unavailable, retry"`
/// otherwise.
pub fn private_message(code: Code) -> &'static str {
    match code {
        Code::Internal => "internal error",
        Code::Aborted => "a concurrent change won; retry",
        _ => "temporarily unavailable, retry",
    }
}

/// The status for `error`, logged once: `INTERNAL` at error level, other private errors
/// at warn level (with their detail), refusals at debug level.
pub fn to_status<E: ServiceError + ?Sized>(error: &E) -> Status {
    if let Some(status) = error.passed_on() {
        tracing::debug!(code = ?status.code(), message = status.message(), "passed on");
        return status.clone();
    }
    let (code, reason) = error.row();
    if code == Code::Internal {
        tracing::error!(error = %error, %reason, "request failed");
    } else if error.is_private() {
        tracing::warn!(error = %error, %reason, "request failed");
    } else {
        tracing::debug!(error = %error, %reason, "request refused");
    }
    if let Some((field, problem)) = error.field() {
        return invalid_field(field, problem);
    }
    let message = error.public_message().unwrap_or_else(|| {
        if error.is_private() {
            private_message(code).to_owned()
        } else {
            error.to_string()
        }
    });
    error_status(code, reason, message, error.metadata())
}

/// `impl From<$error> for tonic::Status` through [`to_status`], for a service's error
/// type (a blanket impl over [`ServiceError`] is not allowed: `Status` is tonic's type).
#[macro_export]
macro_rules! status_from {
    ($error:ty) => {
        impl ::std::convert::From<$error> for ::tonic::Status {
            fn from(error: $error) -> Self {
                $crate::service_error::to_status(&error)
            }
        }
    };
}

/// The row of a database failure, the same in every service: a lost race
/// (serialization failure, deadlock) is `ABORTED/CONTENTION`; a statement or lock
/// timeout `UNAVAILABLE/DATABASE_BUSY`; no answer (connection, pool) or a server that
/// cannot serve the session now (shutting down, starting up, out of connections)
/// `UNAVAILABLE/DATABASE_UNAVAILABLE`; a write to a section another shard owns
/// `UNAVAILABLE/SECTION_MOVED`, to a section being moved `UNAVAILABLE/SECTION_MOVING`;
/// anything else `INTERNAL/INTERNAL`.
pub fn database_row(failure: &DbFailure) -> Row {
    match failure {
        DbFailure::SectionElsewhere { .. } => (Code::Unavailable, Reason::SectionMoved),
        DbFailure::SectionFenced { .. } => (Code::Unavailable, Reason::SectionMoving),
        DbFailure::SerializationFailure | DbFailure::DeadlockDetected => {
            (Code::Aborted, Reason::Contention)
        }
        DbFailure::QueryCanceled | DbFailure::LockNotAvailable => {
            (Code::Unavailable, Reason::DatabaseBusy)
        }
        DbFailure::NotDatabase | DbFailure::ServerUnavailable { .. } => {
            (Code::Unavailable, Reason::DatabaseUnavailable)
        }
        _ => (Code::Internal, Reason::Internal),
    }
}

/// The metadata of a database failure: `section_id` for `SECTION_MOVED`,
/// `retry_after_ms` for `SECTION_MOVING`; nothing for the others.
pub fn database_metadata(failure: &DbFailure) -> Vec<(String, String)> {
    match failure {
        DbFailure::SectionElsewhere {
            section: Some(section),
        } => vec![("section_id".to_owned(), section.to_string())],
        DbFailure::SectionFenced { retry_after_ms } => {
            vec![("retry_after_ms".to_owned(), retry_after_ms.to_string())]
        }
        _ => Vec::new(),
    }
}

/// The row of a refused token: `UNAUTHENTICATED` with `TOKEN_EXPIRED` for an expired
/// one, `TOKEN_INVALID` for every other fault.
pub fn token_row(error: &TokenError) -> Row {
    match error {
        TokenError::Expired => (Code::Unauthenticated, Reason::TokenExpired),
        _ => (Code::Unauthenticated, Reason::TokenInvalid),
    }
}

/// The row of an admin token refused for a call: as [`token_row`] when it does not
/// verify, `PERMISSION_DENIED/ROLE_REQUIRED` when it grants no accepted role.
pub fn access_row(refused: &AccessRefused) -> Row {
    match refused {
        AccessRefused::Token(error) => token_row(error),
        AccessRefused::RoleRequired(_) => (Code::PermissionDenied, Reason::RoleRequired),
    }
}

/// The metadata of an access refusal: for `ROLE_REQUIRED`, `roles` = the accepted
/// roles joined by `,` and, when services may call, `services` = their names joined by
/// `,`; for a refused token, `token` = `admin`.
pub fn access_metadata(refused: &AccessRefused) -> Vec<(String, String)> {
    match refused {
        AccessRefused::RoleRequired(access) => roles_metadata(*access),
        AccessRefused::Token(_) => vec![("token".to_owned(), "admin".to_owned())],
    }
}

fn roles_metadata(access: Access) -> Vec<(String, String)> {
    let mut metadata = vec![("roles".to_owned(), access.to_string())];
    if !access.services().is_empty() {
        metadata.push(("services".to_owned(), access.services().join(",")));
    }
    metadata
}

/// The row of another stadium service that did not answer (metadata `service`).
pub const DEPENDENCY_UNAVAILABLE: Row = (Code::Unavailable, Reason::DependencyUnavailable);

/// Whether `status` is a transport failure rather than the service's own answer: a
/// code of no answer (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `UNKNOWN`) without a stadium
/// reason. Such a status is answered as [`DEPENDENCY_UNAVAILABLE`]; any other is the
/// other service's answer.
pub fn unanswered(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Unknown
    ) && Reason::of(status).is_none()
}

/// The metadata naming one service (`service` = `name`).
pub fn service_metadata(name: impl Display) -> Vec<(String, String)> {
    vec![("service".to_owned(), name.to_string())]
}

#[cfg(test)]
mod tests {
    use stadium_tokens::Role;

    use super::*;
    use crate::status::error_info;

    #[derive(Debug, thiserror::Error)]
    enum Failure {
        #[error("seat 7 taken")]
        Taken,
        #[error("pool timed out after 3 s")]
        Pool,
        #[error("quantity: must be at least 1")]
        Field,
        #[error("holds answered")]
        Passed(Status),
    }

    impl ServiceError for Failure {
        fn row(&self) -> Row {
            match self {
                Failure::Taken => (Code::AlreadyExists, Reason::SeatTaken),
                Failure::Pool => database_row(&DbFailure::NotDatabase),
                Failure::Field => (Code::InvalidArgument, Reason::InvalidField),
                Failure::Passed(_) => (Code::Unknown, Reason::Internal),
            }
        }
        fn metadata(&self) -> Vec<(String, String)> {
            vec![("seat_ids".into(), "7".into())]
        }
        fn field(&self) -> Option<(&str, &str)> {
            matches!(self, Failure::Field).then_some(("quantity", "must be at least 1"))
        }
        fn passed_on(&self) -> Option<&Status> {
            match self {
                Failure::Passed(status) => Some(status),
                _ => None,
            }
        }
    }

    #[test]
    fn a_refusal_says_what_happened() {
        let status = to_status(&Failure::Taken);
        assert_eq!(status.code(), Code::AlreadyExists);
        assert_eq!(status.message(), "seat 7 taken");
        assert_eq!(Reason::of(&status), Some(Reason::SeatTaken));
        assert_eq!(error_info(&status).unwrap().metadata["seat_ids"], "7");
    }

    #[test]
    fn server_side_detail_stays_private() {
        let status = to_status(&Failure::Pool);
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(Reason::of(&status), Some(Reason::DatabaseUnavailable));
        assert!(!status.message().contains("pool"));
    }

    #[test]
    fn fields_and_passed_on_answers_keep_their_shape() {
        let status = to_status(&Failure::Field);
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(error_info(&status).unwrap().metadata["field"], "quantity");
        let theirs = error_status(Code::NotFound, Reason::HoldNotFound, "no hold", []);
        let status = to_status(&Failure::Passed(theirs));
        assert_eq!(Reason::of(&status), Some(Reason::HoldNotFound));
        assert_eq!(status.message(), "no hold");
    }

    #[test]
    fn shared_rows() {
        assert_eq!(
            token_row(&TokenError::Expired),
            (Code::Unauthenticated, Reason::TokenExpired)
        );
        for refused in [
            TokenError::Malformed("x".into()),
            TokenError::NotYetValid,
            TokenError::BadSignature,
            TokenError::UnknownKeyId { kid: "k".into() },
            TokenError::MissingClaim("jti".into()),
        ] {
            assert_eq!(token_row(&refused).1, Reason::TokenInvalid, "{refused}");
        }
        assert_eq!(
            database_row(&DbFailure::DeadlockDetected),
            (Code::Aborted, Reason::Contention)
        );
        assert_eq!(
            database_row(&DbFailure::QueryCanceled).1,
            Reason::DatabaseBusy
        );
        let access = Access::any_of(&[Role::BoxOffice, Role::Sre]).or_services(&["payments"]);
        let refused = AccessRefused::RoleRequired(access);
        assert_eq!(access_row(&refused).1, Reason::RoleRequired);
        assert_eq!(
            access_metadata(&refused),
            [
                ("roles".to_owned(), "box_office,sre".to_owned()),
                ("services".to_owned(), "payments".to_owned())
            ]
        );
        let expired = AccessRefused::Token(TokenError::Expired);
        assert_eq!(access_row(&expired).1, Reason::TokenExpired);
        assert!(unanswered(&Status::unavailable("connection refused")));
        let refusal = error_status(Code::Unavailable, Reason::DatabaseBusy, "busy", []);
        assert!(!unanswered(&refusal));
    }
}
