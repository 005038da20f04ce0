//! Calls to another stadium service, built one way: every request carries a bearer
//! token (RFC 6750 §2.1), a deadline sent as `grpc-timeout` (so the server stops working
//! on a call its caller gave up on), and the current trace context (W3C Trace Context),
//! so a claim or a refund is one trace across services.

use std::fmt;
use std::time::Duration;

use tonic::Request;
use tonic::metadata::{Ascii, MetadataValue};

/// A token that cannot travel as metadata (not visible ASCII). A JWT always can; this
/// is a configuration fault (a secret file with a stray byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the bearer token is not valid gRPC metadata (visible ASCII only)")]
pub struct TokenNotMetadata;

/// An `authorization: Bearer <token>` value, checked once (a service checks its own
/// token at start) and marked sensitive, so it never shows in logs or `Debug` output.
#[derive(Clone)]
pub struct Bearer(MetadataValue<Ascii>);

impl Bearer {
    /// The value for `token` (surrounding blanks trimmed).
    ///
    /// # Errors
    /// [`TokenNotMetadata`] when the token has bytes metadata cannot carry.
    pub fn new(token: &str) -> Result<Self, TokenNotMetadata> {
        let mut value = MetadataValue::try_from(format!("Bearer {}", token.trim()))
            .map_err(|_| TokenNotMetadata)?;
        value.set_sensitive(true);
        Ok(Self(value))
    }
}

impl fmt::Debug for Bearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer(<redacted>)")
    }
}

/// `message` as a request to another service: `authorization` = `bearer`,
/// `grpc-timeout` = `deadline` when given, and the current span's trace context.
pub fn authorized<T>(message: T, bearer: &Bearer, deadline: Option<Duration>) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", bearer.0.clone());
    if let Some(deadline) = deadline {
        request.set_timeout(deadline);
    }
    stadium_telemetry::inject_context(request.metadata_mut());
    request
}

/// `message` as a call of this service's own to another service: with `token` as the
/// bearer when given (a development token standing for this service over plaintext,
/// see [`crate::caller`]), with none when the client certificate names the service;
/// then the deadline and the trace context as [`authorized`].
pub fn as_service<T>(message: T, token: Option<&Bearer>, deadline: Option<Duration>) -> Request<T> {
    match token {
        Some(bearer) => authorized(message, bearer, deadline),
        None => {
            let mut request = Request::new(message);
            if let Some(deadline) = deadline {
                request.set_timeout(deadline);
            }
            stadium_telemetry::inject_context(request.metadata_mut());
            request
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::bearer_token;

    #[test]
    fn carries_the_token_and_the_deadline() {
        let bearer = Bearer::new(" abc.def ").unwrap();
        let request = authorized((), &bearer, Some(Duration::from_millis(1500)));
        assert_eq!(bearer_token(request.metadata()).unwrap(), "abc.def");
        assert_eq!(request.metadata().get("grpc-timeout").unwrap(), "1500000u");
        assert!(
            authorized((), &bearer, None)
                .metadata()
                .get("grpc-timeout")
                .is_none()
        );
        assert!(!format!("{bearer:?}").contains("abc"));
    }

    #[test]
    fn a_service_call_carries_its_token_only_when_it_has_one() {
        let bearer = Bearer::new("abc").unwrap();
        let with = as_service((), Some(&bearer), Some(Duration::from_millis(10)));
        assert_eq!(bearer_token(with.metadata()).unwrap(), "abc");
        let without = as_service((), None, Some(Duration::from_millis(10)));
        assert!(without.metadata().get("authorization").is_none());
        assert_eq!(without.metadata().get("grpc-timeout").unwrap(), "10000000n");
    }

    #[test]
    fn refuses_a_token_metadata_cannot_carry() {
        assert_eq!(Bearer::new("abc\ndef").unwrap_err(), TokenNotMetadata);
    }
}
