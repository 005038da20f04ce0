//! Load shedding: a method given a concurrency limit
//! ([`crate::server::GrpcServer::with_method_concurrency`]) answers at once with
//! `RESOURCE_EXHAUSTED`/`OVERLOADED` and a `retry_after_ms` hint in its `ErrorInfo`
//! metadata when that many of its calls are already running on this replica, instead
//! of queueing the call until its deadline expires. A burst (a million fans joining at
//! the on-sale) then gets fast answers — served, or told when to come back — and the
//! calls that run keep their latency. The client retries after the hint with jitter;
//! nothing was done for a shed call, so retrying is always safe (gRPC's status code
//! table: RESOURCE_EXHAUSTED, "some resource has been exhausted").

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use tokio::sync::Semaphore;
use tonic::Code;
use tower::{Layer, Service};

use crate::Reason;
use crate::status::error_status;

/// One method's limit: calls running at once, and the hint given to the rest.
#[derive(Debug, Clone)]
pub(crate) struct MethodLimit {
    permits: Arc<Semaphore>,
    limit: usize,
    retry_after: Duration,
}

impl MethodLimit {
    /// At most `limit` calls at once (at least 1); shed calls are told `retry_after`.
    pub(crate) fn new(limit: usize, retry_after: Duration) -> Self {
        let limit = limit.max(1);
        Self {
            permits: Arc::new(Semaphore::new(limit)),
            limit,
            retry_after,
        }
    }
}

/// Wraps services in [`Shed`].
#[derive(Debug, Clone)]
pub(crate) struct ShedLayer {
    /// Limits by request path (`/package.Service/Method`); other paths run unlimited.
    pub(crate) per_method: Arc<HashMap<String, MethodLimit>>,
}

impl<S> Layer<S> for ShedLayer {
    type Service = Shed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Shed {
            inner,
            per_method: Arc::clone(&self.per_method),
        }
    }
}

/// Runs a limited method's call while it holds one of the method's permits (released
/// when the response headers are out: the whole call for a unary RPC), and answers
/// `RESOURCE_EXHAUSTED` when none is free.
#[derive(Debug, Clone)]
pub(crate) struct Shed<S> {
    inner: S,
    per_method: Arc<HashMap<String, MethodLimit>>,
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Shed<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Future: Send + 'static,
    ResBody: Default + Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let Some(limit) = self.per_method.get(request.uri().path()) else {
            return Box::pin(self.inner.call(request));
        };
        match Arc::clone(&limit.permits).try_acquire_owned() {
            Ok(permit) => {
                let response = self.inner.call(request);
                Box::pin(async move {
                    let answered = response.await;
                    drop(permit);
                    answered
                })
            }
            Err(_) => {
                let retry_ms = u64::try_from(limit.retry_after.as_millis()).unwrap_or(u64::MAX);
                tracing::debug!(rpc = request.uri().path(), limit = limit.limit, "call shed");
                let status = error_status(
                    Code::ResourceExhausted,
                    Reason::Overloaded,
                    format!(
                        "{} calls of this method are running on this server; retry after {retry_ms} ms",
                        limit.limit
                    ),
                    [("retry_after_ms".to_owned(), retry_ms.to_string())],
                );
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}
