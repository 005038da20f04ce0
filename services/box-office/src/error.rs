//! The box office's one error type and the table mapping each variant to a gRPC status
//! with a stable `ErrorInfo` reason.

use stadium_db::DbFailure;
use stadium_kit::status::{error_status, invalid_field};
use stadium_tokens::TokenError;
use tonic::{Code, Status};

/// Everything a box-office call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable bearer token (the kit's status already says why).
    #[error("{}", .0.message())]
    MissingToken(Status),
    /// The admin token was refused.
    #[error("admin token refused: {0}")]
    Token(#[from] TokenError),
    /// The token lacks every role that would allow the call (`roles` lists them).
    #[error("this call needs the role {roles}")]
    RoleRequired {
        /// The roles that would do, e.g. `"box_office"` or `"box_office or sre"`.
        roles: &'static str,
    },
    /// A request field is missing or malformed.
    #[error("{field}: {problem}")]
    InvalidField {
        /// The proto field path, e.g. `settings.hold_ttl_ms` or `price_categories[1].code`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The seating plan does not parse or is wrong; `path` is its first issue's place.
    #[error("seating plan refused: {message}")]
    PlanInvalid {
        /// JSON path or CSV line of the first issue.
        path: String,
        /// The first issue's problem.
        problem: String,
        /// Every issue, joined.
        message: String,
    },
    /// No venue with that id.
    #[error("no venue {0}")]
    VenueNotFound(i64),
    /// No event with that id.
    #[error("no event {0}")]
    EventNotFound(i64),
    /// The sale is not in a state the requested change starts from.
    #[error("cannot go from {from} to {to}")]
    InvalidTransition {
        /// The event's status now.
        from: String,
        /// The status asked for.
        to: &'static str,
    },
    /// Seats of these categories have no price; a sale cannot run like that.
    #[error("no price for the seat categories {}", .0.join(", "))]
    PricesMissing(Vec<String>),
    /// The event is closed; its prices no longer change.
    #[error("event {0} is closed")]
    EventClosed(i64),
    /// A service this call needs has no URL configured (`--holds-url`, `--payments-url`).
    #[error("no {0} service is configured for this box office")]
    NotConfigured(&'static str),
    /// Another service answered with an error; passed on as it came.
    #[error("{service}: {}", status.message())]
    Upstream {
        /// Which service answered.
        service: &'static str,
        /// Its answer.
        status: Status,
    },
    /// The database failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A stored value could not be read back (a bug or a hand-edited row).
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    /// An [`Error::InvalidField`].
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::InvalidField {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// A shorthand for handler results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let meta = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        match &error {
            Error::MissingToken(status) => status.clone(),
            Error::Token(token) => {
                error_status(Code::Unauthenticated, token.reason(), error.to_string(), [])
            }
            Error::RoleRequired { roles } => error_status(
                Code::PermissionDenied,
                "ROLE_REQUIRED",
                error.to_string(),
                meta(&[("role", roles)]),
            ),
            Error::InvalidField { field, problem } => invalid_field(field, problem),
            Error::PlanInvalid { path, problem, .. } => error_status(
                Code::InvalidArgument,
                "PLAN_INVALID",
                error.to_string(),
                meta(&[("path", path), ("problem", problem)]),
            ),
            Error::VenueNotFound(id) => error_status(
                Code::NotFound,
                "VENUE_NOT_FOUND",
                error.to_string(),
                meta(&[("venue_id", &id.to_string())]),
            ),
            Error::EventNotFound(id) => error_status(
                Code::NotFound,
                "EVENT_NOT_FOUND",
                error.to_string(),
                meta(&[("event_id", &id.to_string())]),
            ),
            Error::InvalidTransition { from, to } => error_status(
                Code::FailedPrecondition,
                "INVALID_TRANSITION",
                error.to_string(),
                meta(&[("from", from), ("to", to)]),
            ),
            Error::PricesMissing(codes) => error_status(
                Code::FailedPrecondition,
                "PRICES_MISSING",
                error.to_string(),
                meta(&[("categories", &codes.join(","))]),
            ),
            Error::EventClosed(_) => error_status(
                Code::FailedPrecondition,
                "EVENT_CLOSED",
                error.to_string(),
                [],
            ),
            Error::NotConfigured(service) => error_status(
                Code::FailedPrecondition,
                "NOT_CONFIGURED",
                error.to_string(),
                meta(&[("service", service)]),
            ),
            Error::Upstream { service, status } => {
                let unreachable = matches!(
                    status.code(),
                    Code::Unavailable | Code::DeadlineExceeded | Code::Unknown
                ) && stadium_kit::status::error_info(status).is_none();
                if unreachable {
                    // A transport failure, not the service's own answer: say which
                    // dependency, in the shape every stadium error has.
                    tracing::warn!(service, code = ?status.code(), message = status.message(), "dependency unavailable");
                    error_status(
                        Code::Unavailable,
                        "DEPENDENCY_UNAVAILABLE",
                        format!("the {service} service did not answer"),
                        meta(&[("service", service)]),
                    )
                } else {
                    status.clone()
                }
            }
            Error::Database(db) => {
                let failure = stadium_db::classify(db);
                tracing::error!(error = %db, sqlstate = failure.sqlstate(), "database failure");
                match failure {
                    DbFailure::NotDatabase | DbFailure::QueryCanceled => error_status(
                        Code::Unavailable,
                        "DEPENDENCY_UNAVAILABLE",
                        "the database did not answer",
                        [],
                    ),
                    _ => error_status(Code::Internal, "INTERNAL", "internal error", []),
                }
            }
            Error::Internal(detail) => {
                tracing::error!(detail, "internal error");
                error_status(Code::Internal, "INTERNAL", "internal error", [])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_info;

    use super::*;

    #[test]
    fn each_variant_has_its_code_and_reason() {
        let cases = [
            (
                Error::Token(TokenError::Expired),
                Code::Unauthenticated,
                "TOKEN_EXPIRED",
            ),
            (
                Error::RoleRequired {
                    roles: "box_office",
                },
                Code::PermissionDenied,
                "ROLE_REQUIRED",
            ),
            (
                Error::invalid("settings.name", "empty"),
                Code::InvalidArgument,
                "INVALID_FIELD",
            ),
            (Error::VenueNotFound(3), Code::NotFound, "VENUE_NOT_FOUND"),
            (Error::EventNotFound(3), Code::NotFound, "EVENT_NOT_FOUND"),
            (
                Error::InvalidTransition {
                    from: "closed".into(),
                    to: "on_sale",
                },
                Code::FailedPrecondition,
                "INVALID_TRANSITION",
            ),
            (
                Error::EventClosed(1),
                Code::FailedPrecondition,
                "EVENT_CLOSED",
            ),
            (
                Error::NotConfigured("holds"),
                Code::FailedPrecondition,
                "NOT_CONFIGURED",
            ),
            (Error::Internal("x".into()), Code::Internal, "INTERNAL"),
        ];
        for (error, code, reason) in cases {
            let status = Status::from(error);
            assert_eq!(status.code(), code);
            assert_eq!(error_info(&status).unwrap().reason, reason);
        }
    }

    #[test]
    fn upstream_answers_pass_and_transport_failures_name_the_service() {
        let taken = error_status(Code::AlreadyExists, "SEAT_TAKEN", "taken", []);
        let passed = Status::from(Error::Upstream {
            service: "holds",
            status: taken,
        });
        assert_eq!(error_info(&passed).unwrap().reason, "SEAT_TAKEN");
        let down = Status::from(Error::Upstream {
            service: "payments",
            status: Status::unavailable("tcp connect error"),
        });
        let info = error_info(&down).unwrap();
        assert_eq!(
            (down.code(), info.reason.as_str()),
            (Code::Unavailable, "DEPENDENCY_UNAVAILABLE")
        );
        assert_eq!(info.metadata["service"], "payments");
    }

    #[test]
    fn an_invalid_transition_names_both_states() {
        let status = Status::from(Error::InvalidTransition {
            from: "draft".into(),
            to: "paused",
        });
        let info = error_info(&status).unwrap();
        assert_eq!(info.metadata["from"], "draft");
        assert_eq!(info.metadata["to"], "paused");
    }
}
