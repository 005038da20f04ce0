//! The box office's one error type and the table mapping each variant to a gRPC status
//! with a stable `ErrorInfo` reason.

use stadium_kit::Reason;
use stadium_kit::service_error::{
    DEPENDENCY_UNAVAILABLE, Row, ServiceError, access_metadata, access_row, database_row,
    service_metadata, unanswered,
};
use stadium_tokens::AccessRefused;
use tonic::{Code, Status};

/// Everything a box-office call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable bearer token (the kit's status already says why).
    #[error("{}", .0.message())]
    MissingToken(Status),
    /// The admin token does not verify, or lacks every role that would allow the call.
    #[error(transparent)]
    Access(#[from] AccessRefused),
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
    /// No such seat in the event's venue; `field` is the request field that named it.
    #[error("no seat {seat} in the event's venue")]
    SeatNotFound {
        /// The proto field path, e.g. `seat.seat_id` or `seat.labels`.
        field: &'static str,
        /// The seat as the request named it.
        seat: String,
    },
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
    /// A presale asked for once the event's on-sale time (RFC 3339) has come: it would
    /// end at once.
    #[error("the on-sale time {0} has passed: a presale would end at once")]
    OnsaleTimePassed(String),
    /// The event is closed; its prices no longer change.
    #[error("event {0} is closed")]
    EventClosed(i64),
    /// The event is not cancelled (a cancellation's progress was asked for).
    #[error("event {0} is not cancelled")]
    NotCancelled(i64),
    /// The section's route names a database that does not have it (see
    /// [`stadium_db::MoveError::NotOnRoute`]): nothing was moved.
    #[error("section {section} is not on shard {shard}, where its route points")]
    SectionOffRoute {
        /// The section.
        section: i64,
        /// The shard its route names.
        shard: String,
    },
    /// A service this call needs has no URL configured (`--holds-url`, `--payments-url`).
    #[error("no {0} service is configured for this box office")]
    NotConfigured(&'static str),
    /// Another service answered with an error; passed on as it came, or answered
    /// `DEPENDENCY_UNAVAILABLE` when it did not answer at all.
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

impl ServiceError for Error {
    fn row(&self) -> Row {
        match self {
            Self::MissingToken(_) => (Code::Unauthenticated, Reason::TokenMissing),
            Self::Access(refused) => access_row(refused),
            Self::InvalidField { .. } => (Code::InvalidArgument, Reason::InvalidField),
            Self::PlanInvalid { .. } => (Code::InvalidArgument, Reason::PlanInvalid),
            Self::VenueNotFound(_) => (Code::NotFound, Reason::VenueNotFound),
            Self::EventNotFound(_) => (Code::NotFound, Reason::EventNotFound),
            Self::SeatNotFound { .. } => (Code::NotFound, Reason::SeatNotFound),
            Self::InvalidTransition { .. } => (Code::FailedPrecondition, Reason::InvalidTransition),
            Self::PricesMissing(_) => (Code::FailedPrecondition, Reason::PricesMissing),
            Self::OnsaleTimePassed(_) => (Code::FailedPrecondition, Reason::OnsaleTimePassed),
            Self::EventClosed(_) => (Code::FailedPrecondition, Reason::EventClosed),
            Self::NotCancelled(_) => (Code::FailedPrecondition, Reason::NotCancelled),
            Self::NotConfigured(_) => (Code::FailedPrecondition, Reason::NotConfigured),
            Self::SectionOffRoute { .. } => (Code::FailedPrecondition, Reason::SectionOffRoute),
            // Only a transport failure gets a row here; an answer is passed on.
            Self::Upstream { .. } => DEPENDENCY_UNAVAILABLE,
            Self::Database(db) => database_row(&stadium_db::classify(db)),
            Self::Internal(_) => (Code::Internal, Reason::Internal),
        }
    }

    fn metadata(&self) -> Vec<(String, String)> {
        let meta = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        match self {
            Self::Access(refused) => access_metadata(refused),
            Self::PlanInvalid { path, problem, .. } => {
                meta(&[("path", path), ("problem", problem)])
            }
            Self::VenueNotFound(id) => meta(&[("venue_id", &id.to_string())]),
            Self::SectionOffRoute { section, shard } => {
                meta(&[("section_id", &section.to_string()), ("shard", shard)])
            }
            Self::EventNotFound(id) | Self::NotCancelled(id) => {
                meta(&[("event_id", &id.to_string())])
            }
            Self::SeatNotFound { field, .. } => meta(&[("field", field)]),
            Self::InvalidTransition { from, to } => meta(&[("from", from), ("to", to)]),
            Self::PricesMissing(codes) => meta(&[("categories", &codes.join(","))]),
            Self::OnsaleTimePassed(at) => meta(&[("onsale_at", at)]),
            Self::NotConfigured(service) | Self::Upstream { service, .. } => {
                service_metadata(service)
            }
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
            // The kit's own answer to a call without a usable token.
            Self::MissingToken(status) => Some(status),
            // Another service's answer, with its reason and metadata.
            Self::Upstream { status, .. } if !unanswered(status) => Some(status),
            _ => None,
        }
    }

    /// An unanswered call to holds or payments is private too, so its transport detail
    /// is logged (WARN) once here; the caller reads which service did not answer.
    fn is_private(&self) -> bool {
        matches!(
            self,
            Self::Database(_) | Self::Internal(_) | Self::Upstream { .. }
        )
    }

    fn public_message(&self) -> Option<String> {
        match self {
            Self::Upstream { service, .. } => Some(format!("the {service} service did not answer")),
            _ => None,
        }
    }
}

stadium_kit::status_from!(Error);

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_info;

    use super::*;

    #[test]
    fn each_variant_has_its_code_and_reason() {
        let cases = [
            (
                Error::Access(AccessRefused::Token(stadium_tokens::TokenError::Expired)),
                Code::Unauthenticated,
                "TOKEN_EXPIRED",
            ),
            (
                Error::Access(AccessRefused::RoleRequired(crate::auth::CHANGE)),
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
                Error::SeatNotFound {
                    field: "seat.seat_id",
                    seat: "9".into(),
                },
                Code::NotFound,
                "SEAT_NOT_FOUND",
            ),
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
        let taken =
            stadium_kit::status::error_status(Code::AlreadyExists, Reason::SeatTaken, "taken", []);
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
        assert_eq!(down.message(), "the payments service did not answer");
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
