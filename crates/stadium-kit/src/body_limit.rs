//! Request size limits per method, for a service whose methods take very different
//! requests (a venue import of many megabytes beside calls of a few hundred bytes).
//!
//! [`BodyLimit`] wraps a tonic service (after its interceptor, so a call is
//! authenticated before its body is read) and caps the bytes each call's body may
//! carry: past the cap the call answers `RESOURCE_EXHAUSTED` / `REQUEST_TOO_LARGE`
//! with metadata `limit_bytes`, and nothing more of the body is buffered. Give the
//! inner server a `max_decoding_message_size` at least the largest cap.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use tonic::Code;
use tonic::body::Body;
use tonic::server::NamedService;
use tower::Service;

use crate::reason::Reason;
use crate::status::error_status;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The cap of a call that carries no bulk data, in bytes: far above any such request
/// (a whole section's seat list fits many times over), far below tonic's 4 MiB.
pub const MAX_CALL_BYTES: usize = 256 * 1024;

/// A tonic service whose calls' bodies are capped per method (bytes).
#[derive(Debug, Clone)]
pub struct BodyLimit<S> {
    inner: S,
    default_bytes: usize,
    per_method: Arc<HashMap<String, usize>>,
}

impl<S> BodyLimit<S> {
    /// `inner`, every call capped at `default_bytes`.
    pub fn new(inner: S, default_bytes: usize) -> Self {
        Self {
            inner,
            default_bytes,
            per_method: Arc::new(HashMap::new()),
        }
    }

    /// Caps the method at `path` (`/package.Service/Method`) at `bytes` instead.
    pub fn with_method(mut self, path: impl Into<String>, bytes: usize) -> Self {
        Arc::make_mut(&mut self.per_method).insert(path.into(), bytes);
        self
    }
}

impl<S: NamedService> NamedService for BodyLimit<S> {
    const NAME: &'static str = S::NAME;
}

/// The status a body past `limit` bytes ends in; tonic answers the call with it.
fn too_large(error: BoxError, limit: usize) -> BoxError {
    if error.is::<LengthLimitError>() {
        Box::new(error_status(
            Code::ResourceExhausted,
            Reason::RequestTooLarge,
            format!("the request is larger than this method's {limit} bytes"),
            [("limit_bytes".to_owned(), limit.to_string())],
        ))
    } else {
        error
    }
}

impl<S, B> Service<http::Request<Body>> for BodyLimit<S>
where
    S: Service<http::Request<Body>, Response = http::Response<B>, Error = Infallible>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = tonic::codegen::Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let limit = self
            .per_method
            .get(request.uri().path())
            .copied()
            .unwrap_or(self.default_bytes);
        let response = self.inner.call(request.map(|body| {
            Body::new(Limited::new(body, limit).map_err(move |error| too_large(error, limit)))
        }));
        Box::pin(async move { Ok(response.await?.map(Body::new)) })
    }
}
