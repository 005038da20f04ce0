//! Per-request timeout answering `DEADLINE_EXCEEDED`.
//!
//! tonic's own `Server::timeout` answers `CANCELLED`, which tells a client that *it*
//! gave up; a server-side budget running out is `DEADLINE_EXCEEDED` in the gRPC status
//! code table, and clients retry the two differently. The budget covers the handler up to
//! the response headers: the whole handler for a unary RPC, the set-up for a stream.
//! A shorter client deadline (`grpc-timeout`) is enforced by tonic itself.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use tower::{Layer, Service};

/// Wraps services in [`Deadline`].
#[derive(Debug, Clone)]
pub(crate) struct DeadlineLayer {
    /// The budget of every RPC not in `per_method`.
    pub(crate) limit: Duration,
    /// Budgets by request path (`/package.Service/Method`).
    pub(crate) per_method: Arc<HashMap<String, Duration>>,
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline {
            inner,
            limit: self.limit,
            per_method: Arc::clone(&self.per_method),
        }
    }
}

/// Answers `DEADLINE_EXCEEDED` (a trailers-only gRPC response) when the inner service
/// takes longer than its method's budget; the inner future is dropped, which cancels
/// the handler.
#[derive(Debug, Clone)]
pub(crate) struct Deadline<S> {
    inner: S,
    limit: Duration,
    per_method: Arc<HashMap<String, Duration>>,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Deadline<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: Default,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let path = request.uri().path().to_owned();
        let limit = self.per_method.get(&path).copied().unwrap_or(self.limit);
        let response = self.inner.call(request);
        Box::pin(async move {
            match tokio::time::timeout(limit, response).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::warn!(rpc = %path, limit_ms = limit.as_millis(), "request timed out");
                    Ok(tonic::Status::deadline_exceeded(format!(
                        "the server did not answer within {} ms",
                        limit.as_millis()
                    ))
                    .into_http())
                }
            }
        })
    }
}
