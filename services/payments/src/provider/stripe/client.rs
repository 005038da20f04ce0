//! The HTTP client under the Stripe adapter: hyper-util's pooled client over rustls
//! (ring, Mozilla's roots; no OpenSSL), form-encoded requests as Stripe takes them,
//! `Authorization: Bearer <secret key>`, an `Idempotency-Key` on every POST, and
//! failures sorted by whether the request can have reached Stripe:
//!
//! - not connected (refused, unresolvable, TLS handshake failed, connect timeout):
//!   [`ProviderError::Unavailable`], nothing happened;
//! - sent, then no complete answer (connection lost, our deadline passed):
//!   [`ProviderError::Timeout`], the outcome is unknown.
//!
//! What an answer's status means is the caller's to decide ([`super::wire`]).

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::{ExposeSecret, SecretString};

use crate::provider::ProviderError;

/// The Stripe API version every request pins (`Stripe-Version`), so the shapes this
/// adapter reads do not change with the account's default version.
pub const STRIPE_VERSION: &str = "2024-06-20";

/// Largest answer read, in bytes: a search page of PaymentIntents stays far below.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// How long a TCP connect may take before the call counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// One answer from the API: its status and its (JSON) body.
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body, at most 1 MiB.
    pub body: Bytes,
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The base URL is not `https://…`, nor `http://` to a loopback host.
    #[error("the Stripe API URL must be https (plain http only to a loopback host): {0}")]
    InsecureUrl(String),
    /// The TLS configuration could not be built.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The secret key cannot go into an HTTP header.
    #[error("the secret key is not a valid header value")]
    BadKey,
}

/// A client of one Stripe API base URL with one secret key. Cheap to clone.
#[derive(Clone)]
pub struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: String,
    authorization: HeaderValue,
    timeout: Duration,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("base", &self.base)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Whether `uri` may carry a secret key: https anywhere, plain http only on loopback
/// (a local fake of the API in tests and development).
fn secure_enough(uri: &Uri) -> bool {
    match uri.scheme_str() {
        Some("https") => uri.host().is_some(),
        Some("http") => matches!(
            uri.host(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        ),
        _ => false,
    }
}

impl HttpClient {
    /// A client of the API at `base` (e.g. `https://api.stripe.com`), authenticating
    /// with `secret_key`; each call answers within `timeout` or is a
    /// [`ProviderError::Timeout`].
    ///
    /// # Errors
    /// [`ClientError`].
    pub fn new(
        base: &Uri,
        secret_key: &SecretString,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        if !secure_enough(base) {
            return Err(ClientError::InsecureUrl(base.to_string()));
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let mut authorization =
            HeaderValue::try_from(format!("Bearer {}", secret_key.expose_secret()))
                .map_err(|_| ClientError::BadKey)?;
        authorization.set_sensitive(true);
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            base: base.to_string().trim_end_matches('/').to_owned(),
            authorization,
            timeout,
        })
    }

    /// `POST {base}{path}` with `form` (pairs, in order, form-encoded) under
    /// `idempotency_key` (Stripe's "Idempotent requests": a repeat with the same key and
    /// parameters gets the first answer and does nothing again).
    ///
    /// # Errors
    /// [`ProviderError::Unavailable`] when the request never reached Stripe;
    /// [`ProviderError::Timeout`] when it may have.
    pub async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        idempotency_key: &str,
    ) -> Result<Answer, ProviderError> {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let request = self
            .request(Method::POST, path)?
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("Idempotency-Key", idempotency_key)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ProviderError::Rejected(format!("request: {e}")))?;
        self.send(request).await
    }

    /// `GET {base}{path}?{query}` (pairs form-encoded).
    ///
    /// # Errors
    /// As [`HttpClient::post`].
    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> Result<Answer, ProviderError> {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        let request = self
            .request(Method::GET, &format!("{path}?{query}"))?
            .body(Full::new(Bytes::new()))
            .map_err(|e| ProviderError::Rejected(format!("request: {e}")))?;
        self.send(request).await
    }

    fn request(&self, method: Method, path: &str) -> Result<http::request::Builder, ProviderError> {
        let uri: Uri = format!("{}{path}", self.base)
            .parse()
            .map_err(|e| ProviderError::Rejected(format!("request URL: {e}")))?;
        Ok(Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, self.authorization.clone())
            .header("Stripe-Version", STRIPE_VERSION)
            .header(header::ACCEPT, "application/json"))
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> Result<Answer, ProviderError> {
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                if e.is_connect() {
                    ProviderError::Unavailable(format!("cannot reach Stripe: {e}"))
                } else {
                    tracing::warn!(error = %e, "stripe connection lost after sending");
                    ProviderError::Timeout
                }
            })?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    tracing::warn!(error = %e, "stripe answer not read whole");
                    ProviderError::Timeout
                })?
                .to_bytes();
            Ok(Answer { status, body })
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(ProviderError::Timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys_travel_over_tls_or_stay_on_loopback() {
        let key = SecretString::from("sk_test_x");
        let ok = |url: &str| HttpClient::new(&url.parse().unwrap(), &key, Duration::from_secs(1));
        assert!(ok("https://api.stripe.com").is_ok());
        assert!(ok("http://127.0.0.1:4242").is_ok());
        assert!(ok("http://localhost:4242/").is_ok());
        assert!(matches!(
            ok("http://api.example.com"),
            Err(ClientError::InsecureUrl(_))
        ));
        assert!(matches!(ok("ftp://x"), Err(ClientError::InsecureUrl(_))));
    }

    #[tokio::test]
    async fn nothing_listening_is_unavailable() {
        // Bind then drop: the port is closed, so the connect is refused.
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = HttpClient::new(
            &format!("http://127.0.0.1:{port}").parse().unwrap(),
            &SecretString::from("sk_test_x"),
            Duration::from_secs(5),
        )
        .unwrap();
        assert!(matches!(
            client.post("/v1/payment_intents", &[], "k").await,
            Err(ProviderError::Unavailable(_))
        ));
    }
}
