//! Calls and refusals in tests: the bearer token on a request, and a refusal's typed
//! reason and `ErrorInfo` metadata.

use stadium_kit::Reason;
use stadium_kit::outbound::{Bearer, authorized};
use stadium_kit::status::error_info;
use tonic::{Code, Request, Status};

/// `message` with `authorization: Bearer <token>`.
///
/// # Panics
/// When `token` cannot travel as metadata (a test's tokens always can).
pub fn bearer<T>(message: T, token: &str) -> Request<T> {
    let bearer = Bearer::new(token).expect("a token that travels as metadata");
    authorized(message, &bearer, None)
}

/// The typed reason of a refusal, asserting its code.
///
/// # Panics
/// When the code is not `code`, or the status has no stadium reason.
pub fn reason(status: &Status, code: Code) -> Reason {
    assert_eq!(status.code(), code, "{status:?}");
    Reason::of(status).unwrap_or_else(|| panic!("no stadium reason in {status:?}"))
}

/// One `ErrorInfo` metadata value of a refusal (`field`, `roles`, …); `None` without it.
pub fn metadata(status: &Status, key: &str) -> Option<String> {
    error_info(status).and_then(|info| info.metadata.get(key).cloned())
}

/// Seat ids of an `ErrorInfo` metadata list (`taken_seat_ids`, …), in its order; empty
/// without it.
///
/// # Panics
/// When an entry is not a number.
pub fn seat_list(status: &Status, key: &str) -> Vec<u64> {
    metadata(status, key)
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("a seat id"))
        .collect()
}

#[cfg(test)]
mod tests {
    use stadium_kit::status::error_status;

    use super::*;

    #[test]
    fn reads_a_refusal() {
        let status = error_status(
            Code::AlreadyExists,
            Reason::SeatTaken,
            "taken",
            [("taken_seat_ids".to_owned(), "3,4".to_owned())],
        );
        assert_eq!(reason(&status, Code::AlreadyExists), Reason::SeatTaken);
        assert_eq!(seat_list(&status, "taken_seat_ids"), [3, 4]);
        assert!(seat_list(&status, "other").is_empty());
        let request = bearer((), "abc");
        assert_eq!(
            stadium_kit::auth::bearer_token(request.metadata()).unwrap(),
            "abc"
        );
    }
}
