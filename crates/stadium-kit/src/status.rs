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

/// Longest message (and `BadRequest` description) sent, in bytes; longer ones are cut.
pub const MAX_MESSAGE_BYTES: usize = 1024;
/// Longest `ErrorInfo` metadata value (or field path) sent, in bytes; longer ones are cut.
pub const MAX_METADATA_VALUE_BYTES: usize = 2048;
/// Most `ErrorInfo` metadata entries sent; the rest are dropped.
pub const MAX_METADATA_ENTRIES: usize = 16;

/// `text` cut to at most `max` bytes on a character boundary, ending in `…` when cut, so
/// an error that quotes its input (a whole CSV line, say) stays small enough for every
/// client to read its details (`grpc-status-details-bin` travels in a header).
pub fn bounded(text: impl Into<String>, max: usize) -> String {
    let mut text = text.into();
    if text.len() > max {
        const ELLIPSIS: &str = "…";
        let mut end = max.saturating_sub(ELLIPSIS.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(ELLIPSIS);
    }
    text
}

/// A status with `code`, `message` and an `ErrorInfo` (domain [`DOMAIN`], `reason`,
/// `metadata` as string pairs; a repeated key keeps its last value). Sizes are bounded:
/// the message by [`MAX_MESSAGE_BYTES`], each metadata key and value by
/// [`MAX_METADATA_VALUE_BYTES`], the entries by [`MAX_METADATA_ENTRIES`].
pub fn error_status(
    code: Code,
    reason: Reason,
    message: impl Into<String>,
    metadata: impl IntoIterator<Item = (String, String)>,
) -> Status {
    let metadata: std::collections::HashMap<String, String> = metadata
        .into_iter()
        .take(MAX_METADATA_ENTRIES)
        .map(|(key, value)| {
            (
                bounded(key, MAX_METADATA_VALUE_BYTES),
                bounded(value, MAX_METADATA_VALUE_BYTES),
            )
        })
        .collect();
    Status::with_error_details(
        code,
        bounded(message, MAX_MESSAGE_BYTES),
        ErrorDetails::with_error_info(reason.as_str(), DOMAIN, metadata),
    )
}

/// `INVALID_ARGUMENT` with reason [`Reason::InvalidField`], metadata `field = <field>`, and a
/// `google.rpc.BadRequest` field violation, for a request field that fails validation.
///
/// `field` is the proto field path (`seat_ids[3]`, `event_id`); `problem` says what is
/// wrong with it and ends up in the message: `"<field>: <problem>"`.
pub fn invalid_field(field: &str, problem: impl Display) -> Status {
    let field = bounded(field, MAX_METADATA_VALUE_BYTES);
    let field = field.as_str();
    let problem = bounded(problem.to_string(), MAX_MESSAGE_BYTES);
    let mut details = ErrorDetails::with_error_info(
        Reason::InvalidField.as_str(),
        DOMAIN,
        [("field".to_owned(), field.to_owned())],
    );
    details.add_bad_request_violation(field, problem.clone());
    Status::with_error_details(
        Code::InvalidArgument,
        bounded(format!("{field}: {problem}"), MAX_MESSAGE_BYTES),
        details,
    )
}

/// The `ErrorInfo` detail of `status`, if it has one that decodes.
pub fn error_info(status: &Status) -> Option<ErrorInfo> {
    status.get_details_error_info()
}

/// `status` as a caller should read it: a call whose connection failed before the
/// server answered (the server process died mid-call, the network cut) becomes
/// UNAVAILABLE, as gRPC's HTTP/2 mapping asks (grpc/grpc `doc/PROTOCOL-HTTP2.md`,
/// "Errors"); tonic reports an I/O failure under HTTP/2 as UNKNOWN ("h2 protocol
/// error"). Such a status is told apart by being UNKNOWN *and made on this side from an
/// error* (it has a `source`): an UNKNOWN the server sent arrives without one and is
/// returned as it is, as is every other status.
///
/// The call may or may not have run on the server: only an idempotent call may be
/// repeated on this UNAVAILABLE.
pub fn transport_failure_as_unavailable(status: Status) -> Status {
    if status.code() == Code::Unknown && std::error::Error::source(&status).is_some() {
        Status::unavailable(bounded(
            format!(
                "the connection failed before an answer: {}",
                status.message()
            ),
            MAX_MESSAGE_BYTES,
        ))
    } else {
        status
    }
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
    fn long_input_is_cut_so_details_stay_readable() {
        // A 2.4 MB CSV header quoted back used to travel whole in the details header.
        let line = "é".repeat(1_200_000);
        let status = invalid_field("csv", format!("header must be …, found {line:?}"));
        assert!(status.message().len() <= MAX_MESSAGE_BYTES);
        assert!(status.message().ends_with('…'));
        assert!(
            status.details().len() < 4 * 1024,
            "{}",
            status.details().len()
        );
        let many = (0..100).map(|i| (format!("k{i}"), line.clone()));
        let status = error_status(Code::Internal, Reason::Internal, line.clone(), many);
        let info = error_info(&status).unwrap();
        assert_eq!(info.metadata.len(), MAX_METADATA_ENTRIES);
        assert!(
            info.metadata
                .values()
                .all(|v| v.len() <= MAX_METADATA_VALUE_BYTES)
        );
        assert!(status.details().len() < 64 * 1024);
        assert_eq!(bounded("short", 10), "short");
        assert_eq!(bounded("abcdef", 4), "a…");
    }

    #[test]
    fn an_unknown_the_server_sent_stays_unknown() {
        let sent = transport_failure_as_unavailable(Status::unknown("boom"));
        assert_eq!(sent.code(), Code::Unknown);
        assert_eq!(sent.message(), "boom");
        let refused = transport_failure_as_unavailable(Status::not_found("no hold"));
        assert_eq!(refused.code(), Code::NotFound);
    }

    #[test]
    fn plain_status_has_no_error_info() {
        assert!(error_info(&Status::internal("boom")).is_none());
    }
}
