//! `tonic::Status` values with a `google.rpc.ErrorInfo` detail.
//!
//! Every stadium error carries `ErrorInfo { reason, domain: "stadium", metadata }` so
//! clients branch on a stable `reason` (listed per RPC in the protos) and never parse the
//! human message.

use std::fmt::Display;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::reason::Reason;

pub use tonic_types::ErrorInfo;

/// `ErrorInfo.domain` of every stadium error.
pub const DOMAIN: &str = "stadium";

/// A status with `code`, `message` and an `ErrorInfo` (domain [`DOMAIN`], `reason`,
/// `metadata` as string pairs; a repeated key keeps its last value).
pub fn error_status(
    code: Code,
    reason: Reason,
    message: impl Into<String>,
    metadata: impl IntoIterator<Item = (String, String)>,
) -> Status {
    let metadata: std::collections::HashMap<String, String> = metadata.into_iter().collect();
    Status::with_error_details(
        code,
        message,
        ErrorDetails::with_error_info(reason.as_str(), DOMAIN, metadata),
    )
}

/// `INVALID_ARGUMENT` with reason [`Reason::InvalidField`], metadata `field = <field>`, and a
/// `google.rpc.BadRequest` field violation, for a request field that fails validation.
///
/// `field` is the proto field path (`seat_ids[3]`, `event_id`); `problem` says what is
/// wrong with it and ends up in the message: `"<field>: <problem>"`.
pub fn invalid_field(field: &str, problem: impl Display) -> Status {
    let problem = problem.to_string();
    let mut details = ErrorDetails::with_error_info(
        Reason::InvalidField.as_str(),
        DOMAIN,
        [("field".to_owned(), field.to_owned())],
    );
    details.add_bad_request_violation(field, problem.clone());
    Status::with_error_details(
        Code::InvalidArgument,
        format!("{field}: {problem}"),
        details,
    )
}

/// The `ErrorInfo` detail of `status`, if it has one that decodes.
pub fn error_info(status: &Status) -> Option<ErrorInfo> {
    status.get_details_error_info()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_status_round_trips_error_info() {
        let status = error_status(
            Code::AlreadyExists,
            Reason::SeatTaken,
            "2 seats are taken",
            [("seat_ids".to_owned(), "A-1,A-2".to_owned())],
        );
        assert_eq!(status.code(), Code::AlreadyExists);
        assert_eq!(status.message(), "2 seats are taken");
        let info = error_info(&status).unwrap();
        assert_eq!(info.reason, "SEAT_TAKEN");
        assert_eq!(info.domain, DOMAIN);
        assert_eq!(info.metadata["seat_ids"], "A-1,A-2");
    }

    #[test]
    fn invalid_field_names_the_field() {
        let status = invalid_field("event_id", "not a UUID");
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(status.message(), "event_id: not a UUID");
        let info = error_info(&status).unwrap();
        assert_eq!(info.reason, "INVALID_FIELD");
        assert_eq!(info.metadata["field"], "event_id");
        let violations = status.get_details_bad_request().unwrap().field_violations;
        assert_eq!(violations[0].field, "event_id");
    }

    #[test]
    fn plain_status_has_no_error_info() {
        assert!(error_info(&Status::internal("boom")).is_none());
    }
}
