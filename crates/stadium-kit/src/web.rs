//! gRPC-web for browsers: every [`crate::server::GrpcServer`] also answers gRPC-web
//! requests (`application/grpc-web`, `application/grpc-web-text`; translated by
//! `tonic-web`, over HTTP/1.1 or HTTP/2), so a web page speaks the same v1 contracts as
//! every other client. Cross-origin calls are allowed only from the origins an
//! operator lists (`--cors-allowed-origins`): a preflight from any other origin gets no
//! `Access-Control-Allow-*` headers, so the browser refuses the call (the Fetch
//! standard's CORS protocol, <https://fetch.spec.whatwg.org/#http-cors-protocol>).

use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Request headers a gRPC-web client sends (grpc-web's PROTOCOL-WEB.md, and the
/// Connect clients' `connect-*` headers for the same transport).
const REQUEST_HEADERS: [&str; 7] = [
    "authorization",
    "content-type",
    "grpc-timeout",
    "x-grpc-web",
    "x-user-agent",
    "connect-protocol-version",
    "connect-timeout-ms",
];

/// Response headers a page's script may read: the gRPC status when it comes as
/// headers (a trailers-only answer).
const EXPOSED_HEADERS: [&str; 3] = ["grpc-status", "grpc-message", "grpc-status-details-bin"];

/// How long a browser may cache a preflight answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3_600);

/// An origin allowed to call the service from a browser: `scheme://host[:port]`, as a
/// browser sends it in `Origin` (RFC 6454 section 6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebOrigin(HeaderValue);

impl WebOrigin {
    /// Parses `http://host[:port]` or `https://host[:port]`, without path, query or
    /// user info; a trailing `/` is dropped.
    ///
    /// # Errors
    /// A message saying what is wrong (clap prints it next to the flag).
    pub fn parse(value: &str) -> Result<Self, String> {
        let trimmed = value.trim().trim_end_matches('/');
        if trimmed == "*" {
            return Err("a wildcard is not allowed: list each origin".to_owned());
        }
        let uri: http::Uri = trimmed
            .parse()
            .map_err(|e| format!("not an origin ({e}); expected e.g. https://tickets.example"))?;
        match uri.scheme_str() {
            Some("http" | "https") => {}
            _ => return Err("the scheme must be http:// or https://".to_owned()),
        }
        let authority = uri
            .authority()
            .filter(|a| !a.host().is_empty())
            .ok_or("a host is required, e.g. https://tickets.example")?;
        if authority.as_str().contains('@') {
            return Err("an origin has no user info".to_owned());
        }
        if uri.path_and_query().is_some_and(|p| p.as_str() != "/") {
            return Err("an origin has no path or query".to_owned());
        }
        let text = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or_default(),
            authority.as_str().to_ascii_lowercase()
        );
        HeaderValue::from_str(&text)
            .map(Self)
            .map_err(|e| format!("not a header value: {e}"))
    }

    /// The origin as sent in `Origin`.
    pub fn as_str(&self) -> &str {
        self.0.to_str().unwrap_or_default()
    }
}

/// The CORS layer for `origins`; `None` when the list is empty (no cross-origin call is
/// allowed; a page served from the service's own origin still works).
pub fn cors(origins: &[WebOrigin]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let names = |list: &[&'static str]| -> Vec<HeaderName> {
        list.iter().map(|h| HeaderName::from_static(h)).collect()
    };
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins.iter().map(|o| o.0.clone())))
            .allow_methods([Method::POST, Method::OPTIONS])
            .allow_headers(names(&REQUEST_HEADERS))
            .expose_headers(names(&EXPOSED_HEADERS))
            .max_age(PREFLIGHT_MAX_AGE),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_and_authority_only() {
        assert_eq!(
            WebOrigin::parse("https://Tickets.Example/")
                .unwrap()
                .as_str(),
            "https://tickets.example"
        );
        assert_eq!(
            WebOrigin::parse("http://127.0.0.1:5173").unwrap().as_str(),
            "http://127.0.0.1:5173"
        );
        for bad in [
            "*",
            "tickets.example",
            "ftp://tickets.example",
            "https://tickets.example/page",
            "https://tickets.example?x=1",
            "https://user@tickets.example",
            "https://",
            "",
        ] {
            assert!(WebOrigin::parse(bad).is_err(), "{bad:?} accepted");
        }
    }
}
